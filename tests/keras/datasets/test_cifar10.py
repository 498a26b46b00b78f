"""Tests for kiln.keras.datasets.cifar10: formats, pixel order, safety, sources.

HOME, KERAS_HOME and KILN_DATASETS point into tmp_path and urllib's urlopen
is replaced, so neither the developer's ~/.keras nor the network is used.
"""

import hashlib
import io
import os
import pickle
import sys
import tarfile
import types
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from kiln.keras.datasets import _files, cifar10

REAL_DATASETS = os.environ.get("KILN_DATASETS")  # captured before monkeypatching
BATCH_NAMES = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
               "data_batch_5", "test_batch"]
PER_BATCH = 3


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Fresh HOME, no KERAS_HOME/KILN_DATASETS, channels_last, no network."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.delenv("KILN_DATASETS", raising=False)
    use_image_data_format(monkeypatch, "channels_last")

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    return home / ".keras" / "datasets"


def use_image_data_format(monkeypatch, data_format):
    backend = types.ModuleType("kiln.keras.backend")
    backend.image_data_format = lambda: data_format
    monkeypatch.setitem(sys.modules, "kiln.keras.backend", backend)


def make_batches(seed=0):
    """{name: (pixels (PER_BATCH, 3072) uint8, labels list)} for all six batches."""
    rng = np.random.default_rng(seed)
    return {name: (rng.integers(0, 256, (PER_BATCH, 3072), dtype=np.uint8),
                   [int(v) for v in rng.integers(0, 10, PER_BATCH)])
            for name in BATCH_NAMES}


def write_python_batches(folder, batches, protocol=pickle.HIGHEST_PROTOCOL, as_bytes=False):
    folder.mkdir(parents=True, exist_ok=True)
    for name, (pixels, labels) in batches.items():
        data = pixels.tobytes() if as_bytes else pixels
        batch = {b"batch_label": name.encode(), b"labels": labels, b"data": data,
                 b"filenames": [b"img%d.png" % i for i in range(len(labels))]}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=protocol))


def write_binary_batches(folder, batches):
    folder.mkdir(parents=True, exist_ok=True)
    for name, (pixels, labels) in batches.items():
        records = np.concatenate([np.array(labels, np.uint8)[:, None], pixels], axis=1)
        (folder / (name + ".bin")).write_bytes(records.tobytes())


def expected(batches):
    """What load_data must return, computed independently of the loader."""
    def images(pixels):  # planar rows -> (N, 32, 32, 3)
        return np.stack([pixels.reshape(-1, 3, 1024)[:, c].reshape(-1, 32, 32)
                         for c in range(3)], axis=-1)
    train = [batches[n] for n in BATCH_NAMES[:5]]
    return ((images(np.concatenate([p for p, _ in train])),
             np.array(sum((labels for _, labels in train), []), np.uint8).reshape(-1, 1)),
            (images(batches["test_batch"][0]),
             np.array(batches["test_batch"][1], np.uint8).reshape(-1, 1)))


def assert_loaded(loaded, batches):
    for got, want in zip(sum(loaded, ()), sum(expected(batches), ())):
        assert got.dtype == np.uint8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("protocol", [2, 3, 5])
@pytest.mark.parametrize("as_bytes", [False, True], ids=["ndarray", "bytes"])
def test_python_batches_in_keras_cache(isolated, protocol, as_bytes):
    batches = make_batches()
    write_python_batches(isolated / "cifar-10-batches-py", batches, protocol, as_bytes)
    (x_train, y_train), (x_test, y_test) = loaded = cifar10.load_data()
    assert x_train.shape == (5 * PER_BATCH, 32, 32, 3) and y_train.shape == (5 * PER_BATCH, 1)
    assert x_test.shape == (PER_BATCH, 32, 32, 3) and y_test.shape == (PER_BATCH, 1)
    assert_loaded(loaded, batches)


def python2_batch(pixels, labels):
    """A batch pickled the way the official Python 2 files are (protocol 2,
    str keys, numpy.core.multiarray._reconstruct), written opcode by opcode."""
    rows = len(labels)
    return b"".join([
        b"\x80\x02}(U\x04data",
        b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nK\x00\x85U\x01b\x87R",
        b"(K\x01K%cM\x00\x0c\x86" % rows,
        b"cnumpy\ndtype\nU\x02u1K\x00K\x01\x87R",
        b"(K\x03U\x01|NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb",
        b"\x89T" + len(pixels.tobytes()).to_bytes(4, "little") + pixels.tobytes() + b"tb",
        b"U\x06labels](" + b"".join(b"K%c" % v for v in labels) + b"eu."])


def test_python2_style_batch_like_the_official_files(tmp_path):
    pixels = np.arange(2 * 3072, dtype=np.uint32).astype(np.uint8).reshape(2, 3072)
    blob = python2_batch(pixels, [3, 8])
    # The hand-made pickle is valid: plain pickle (which trusts numpy) agrees.
    reference = pickle.loads(blob, encoding="bytes")
    np.testing.assert_array_equal(reference[b"data"], pixels)
    (tmp_path / "test_batch").write_bytes(blob)
    got_pixels, got_labels = cifar10.read_python_batch(tmp_path / "test_batch")
    np.testing.assert_array_equal(got_pixels, pixels)
    np.testing.assert_array_equal(got_labels, [3, 8])


def test_planar_rgb_becomes_hwc_with_exact_pixel_values(isolated):
    batches = {name: (np.zeros((1, 3072), np.uint8), [0]) for name in BATCH_NAMES}
    pixels = batches["test_batch"][0]
    row, col = 1, 2  # red plane first, then green, then blue; row-major inside
    pixels[0, 0 * 1024 + row * 32 + col] = 11
    pixels[0, 1 * 1024 + row * 32 + col] = 22
    pixels[0, 2 * 1024 + row * 32 + col] = 33
    pixels[0, 2 * 1024 + 31 * 32 + 0] = 99  # blue, last row, first column
    write_python_batches(isolated / "cifar-10-batches-py", batches)
    _, (x_test, _) = cifar10.load_data()
    assert list(x_test[0, row, col]) == [11, 22, 33]
    assert x_test[0, 31, 0, 2] == 99
    assert x_test[0, 2, 1].sum() == 0  # transposed position stays empty
    assert x_test.flags["C_CONTIGUOUS"]


def test_channels_first_when_backend_says_so(isolated, monkeypatch):
    batches = make_batches()
    write_python_batches(isolated / "cifar-10-batches-py", batches)
    use_image_data_format(monkeypatch, "channels_first")
    (x_train, _), (x_test, _) = cifar10.load_data()
    assert x_test.shape == (PER_BATCH, 3, 32, 32)
    np.testing.assert_array_equal(x_test.transpose(0, 2, 3, 1), expected(batches)[1][0])


def test_channels_last_when_backend_is_missing(isolated, monkeypatch):
    write_python_batches(isolated / "cifar-10-batches-py", make_batches())
    monkeypatch.setitem(sys.modules, "kiln.keras.backend", None)  # import fails
    assert cifar10.load_data()[1][0].shape == (PER_BATCH, 32, 32, 3)


@pytest.mark.parametrize("where", ["cache-bin", "kiln-bin-dir", "kiln-flat"])
def test_binary_batches(isolated, tmp_path, monkeypatch, where):
    batches = make_batches()
    folder = {"cache-bin": isolated / "cifar-10-batches-bin",
              "kiln-bin-dir": tmp_path / "data" / "cifar10" / "cifar-10-batches-bin",
              "kiln-flat": tmp_path / "data" / "cifar10"}[where]
    write_binary_batches(folder, batches)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    assert_loaded(cifar10.load_data(), batches)


def test_priority_python_cache_then_binary_cache_then_kiln(isolated, tmp_path, monkeypatch):
    python, binary, kiln = make_batches(1), make_batches(2), make_batches(3)
    write_binary_batches(tmp_path / "data" / "cifar10", kiln)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    assert_loaded(cifar10.load_data(), kiln)
    write_binary_batches(isolated / "cifar-10-batches-bin", binary)
    assert_loaded(cifar10.load_data(), binary)
    write_python_batches(isolated / "cifar-10-batches-py", python)
    assert_loaded(cifar10.load_data(), python)


class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.mark.parametrize("evil", [
    pickle.dumps(os.system),
    pickle.dumps({b"data": Payload(), b"labels": []}),
    pickle.dumps({b"data": types.SimpleNamespace(), b"labels": []}),
    pickle.dumps({b"data": np.float64(1.0), b"labels": []}),
], ids=["os.system", "reduce-payload", "class-instance", "numpy-scalar"])
def test_restricted_unpickler_refuses_globals(tmp_path, evil):
    (tmp_path / "test_batch").write_bytes(evil)
    with pytest.raises(ValueError, match="refusing global"):
        cifar10.read_python_batch(tmp_path / "test_batch")
    with pytest.raises(pickle.UnpicklingError):
        cifar10.RestrictedUnpickler(io.BytesIO(evil)).load()


@pytest.mark.parametrize("batch,message", [
    ({b"data": np.array([1, 2], dtype=object), b"labels": [0]}, "uint8"),
    ({b"data": np.zeros((1, 3072), np.float32), b"labels": [0]}, "uint8"),
    ({b"labels": [0]}, "missing key 'data'"),
    ({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}, "expected 2 labels"),
    ({b"data": np.zeros((1, 3072), np.uint8), b"labels": [10]}, "out of range"),
    ({b"data": np.zeros((1, 100), np.uint8), b"labels": [0]}, r"\(N, 3072\)"),
    ([1, 2, 3], "expected a pickled dict"),
])
def test_malformed_python_batches(tmp_path, batch, message):
    (tmp_path / "b").write_bytes(pickle.dumps(batch))
    with pytest.raises(ValueError, match=message):
        cifar10.read_python_batch(tmp_path / "b")


def test_binary_batch_with_partial_record(tmp_path):
    (tmp_path / "test_batch.bin").write_bytes(b"\0" * 3074)
    with pytest.raises(ValueError, match="3073-byte"):
        cifar10.read_binary_batch(tmp_path / "test_batch.bin")


def test_partial_folder_is_reported(isolated):
    write_python_batches(isolated / "cifar-10-batches-py", make_batches())
    (isolated / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        cifar10.load_data()


def test_offline_error_says_where_to_put_files(isolated):
    with pytest.raises(OSError) as info:
        cifar10.load_data()
    message = str(info.value)
    assert str(isolated / "cifar-10-python.tar.gz") in message
    assert str(isolated / "cifar-10-batches-py") in message
    assert str(isolated / "cifar-10-batches-bin") in message
    assert "KILN_DATASETS" in message and "cifar10" in message


def tarball(members):
    """A .tar.gz of {name: bytes}."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def serve(monkeypatch, payload):
    def fake_urlopen(url, timeout=None):
        assert url == cifar10.ORIGIN_URL and timeout is not None
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)


def test_download_verifies_and_extracts(isolated, tmp_path, monkeypatch):
    batches = make_batches()
    write_python_batches(tmp_path / "src", batches)
    payload = tarball({f"cifar-10-batches-py/{n}": (tmp_path / "src" / n).read_bytes()
                       for n in BATCH_NAMES})
    monkeypatch.setattr(cifar10, "ORIGIN_SHA256", hashlib.sha256(payload).hexdigest())
    serve(monkeypatch, payload)
    assert_loaded(cifar10.load_data(), batches)
    assert (isolated / "cifar-10-batches-py" / "test_batch").is_file()


def test_download_with_wrong_sha256_is_rejected(isolated, monkeypatch):
    serve(monkeypatch, tarball({"cifar-10-batches-py/test_batch": b"x"}))
    with pytest.raises(OSError, match="sha256 mismatch"):
        cifar10.load_data()
    assert list(isolated.iterdir()) == []


@pytest.mark.parametrize("name", ["/tmp/evil", "../evil", "cifar-10-batches-py/../../evil"])
def test_unsafe_tar_members_are_refused(tmp_path, name):
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(tarball({"ok": b"1", name: b"2"}))
    with pytest.raises(ValueError, match="unsafe member"):
        _files.extract_tar_safely(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "ok").exists()  # checked before writing anything


def test_tar_links_are_refused(tmp_path):
    archive = tmp_path / "a.tar"
    with tarfile.open(archive, "w") as tar:
        link = tarfile.TarInfo("cifar-10-batches-py/test_batch")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    with pytest.raises(ValueError, match="non-regular"):
        _files.extract_tar_safely(archive, tmp_path / "out")


def test_load_sample_missing_is_explained(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="KILN_DATASETS"):
        cifar10.load_sample()
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cifar10_test_first846.npz"):
        cifar10.load_sample()


def test_load_sample_from_fixture(tmp_path, monkeypatch):
    x = np.random.default_rng(0).integers(0, 256, (846, 32, 32, 3), dtype=np.uint8)
    y = np.arange(846, dtype=np.uint8) % 10
    (tmp_path / "cifar10-sample").mkdir()
    np.savez(tmp_path / "cifar10-sample" / "cifar10_test_first846.npz", x_test=x, y_test=y)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path))
    x_got, y_got = cifar10.load_sample()
    np.testing.assert_array_equal(x_got, x)
    np.testing.assert_array_equal(y_got, y)


@pytest.mark.skipif(not (REAL_DATASETS and (Path(REAL_DATASETS) / "cifar10-sample"
                                            / "cifar10_test_first846.npz").is_file()),
                    reason="CIFAR-10 sample not present (set KILN_DATASETS)")
def test_real_cifar10_sample(monkeypatch):
    monkeypatch.setenv("KILN_DATASETS", REAL_DATASETS)
    x_test, y_test = cifar10.load_sample()
    assert x_test.shape == (846, 32, 32, 3) and x_test.dtype == np.uint8
    assert y_test.shape == (846,)
    assert y_test.min() >= 0 and y_test.max() <= 9
    assert len(np.unique(y_test)) == 10
