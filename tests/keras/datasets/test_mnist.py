"""Tests for kiln.keras.datasets.mnist: sources, their order, and failure modes.

Every test runs with HOME, KERAS_HOME and KILN_DATASETS pointing into
tmp_path and with urllib's urlopen replaced, so the developer's ~/.keras and
the network are never touched.
"""

import gzip
import hashlib
import io
import os
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from kiln.keras.datasets import _files, mnist

# Captured before any monkeypatching: where the real data lives, if anywhere.
REAL_DATASETS = os.environ.get("KILN_DATASETS")

LECUN_NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]
DOTTED_NAMES = ["train-images.idx3-ubyte", "train-labels.idx1-ubyte",
                "t10k-images.idx3-ubyte", "t10k-labels.idx1-ubyte"]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Fresh HOME, no KERAS_HOME/KILN_DATASETS, and no network."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.delenv("KILN_DATASETS", raising=False)

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    return home


def small_mnist(seed=0):
    """A few random samples in the real dtypes and shapes."""
    rng = np.random.default_rng(seed)
    return {"x_train": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
            "y_train": rng.integers(0, 10, 5, dtype=np.uint8),
            "x_test": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
            "y_test": rng.integers(0, 10, 3, dtype=np.uint8)}


def idx_bytes(array):
    magic = 0x0803 if array.ndim == 3 else 0x0801
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()


def write_idx_set(folder, arrays, names=LECUN_NAMES, gz=False):
    folder.mkdir(parents=True, exist_ok=True)
    for key, name in zip(["x_train", "y_train", "x_test", "y_test"], names):
        data = idx_bytes(arrays[key])
        if gz:
            (folder / (name + ".gz")).write_bytes(gzip.compress(data))
        else:
            (folder / name).write_bytes(data)


def assert_same(loaded, arrays):
    (x_train, y_train), (x_test, y_test) = loaded
    for got, key in [(x_train, "x_train"), (y_train, "y_train"),
                     (x_test, "x_test"), (y_test, "y_test")]:
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, arrays[key])


def test_reads_npz_from_home_keras_cache(isolated):
    arrays = small_mnist()
    cache = isolated / ".keras" / "datasets"
    cache.mkdir(parents=True)
    np.savez(cache / "mnist.npz", **arrays)
    assert_same(mnist.load_data(), arrays)


def test_keras_home_replaces_home(isolated, tmp_path, monkeypatch):
    in_home, in_keras_home = small_mnist(1), small_mnist(2)
    (isolated / ".keras" / "datasets").mkdir(parents=True)
    np.savez(isolated / ".keras" / "datasets" / "mnist.npz", **in_home)
    (tmp_path / "kh" / "datasets").mkdir(parents=True)
    np.savez(tmp_path / "kh" / "datasets" / "mnist.npz", **in_keras_home)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    assert_same(mnist.load_data(), in_keras_home)


def test_path_argument_relative_and_absolute(isolated, tmp_path):
    arrays = small_mnist()
    cache = isolated / ".keras" / "datasets"
    cache.mkdir(parents=True)
    np.savez(cache / "other.npz", **arrays)
    assert_same(mnist.load_data(path="other.npz"), arrays)
    np.savez(tmp_path / "elsewhere.npz", **arrays)
    assert_same(mnist.load_data(path=str(tmp_path / "elsewhere.npz")), arrays)


def test_npz_with_pickled_object_array_is_refused(isolated):
    cache = isolated / ".keras" / "datasets"
    cache.mkdir(parents=True)
    arrays = dict(small_mnist(), x_train=np.array([object()], dtype=object))
    np.savez(cache / "mnist.npz", **arrays)
    with pytest.raises(ValueError, match="mnist.npz"):
        mnist.load_data()


@pytest.mark.parametrize("names,gz", [(LECUN_NAMES, False), (LECUN_NAMES, True),
                                      (DOTTED_NAMES, False), (DOTTED_NAMES, True)],
                         ids=["plain", "gz", "dotted", "dotted-gz"])
def test_reads_idx_from_kiln_datasets(tmp_path, monkeypatch, names, gz):
    arrays = small_mnist()
    write_idx_set(tmp_path / "data" / "mnist", arrays, names, gz)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    assert_same(mnist.load_data(), arrays)


def test_npz_cache_wins_over_idx(isolated, tmp_path, monkeypatch):
    from_npz, from_idx = small_mnist(1), small_mnist(2)
    (isolated / ".keras" / "datasets").mkdir(parents=True)
    np.savez(isolated / ".keras" / "datasets" / "mnist.npz", **from_npz)
    write_idx_set(tmp_path / "data" / "mnist", from_idx)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    assert_same(mnist.load_data(), from_npz)


def test_idx_bad_magic_names_file_and_expectation(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "mnist"
    write_idx_set(folder, small_mnist())
    # Swap in a labels header (0x801) where images are expected.
    bad = folder / "train-images-idx3-ubyte"
    bad.write_bytes((0x0801).to_bytes(4, "big") + bad.read_bytes()[4:])
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.*0x00000801.*0x00000803"):
        mnist.load_data()


@pytest.mark.parametrize("corrupt,message", [
    (lambda raw: raw[:-1], "should be"),                       # truncated pixels
    (lambda raw: raw + b"\0", "should be"),                    # trailing garbage
    (lambda raw: b"\0\0\x0d\x03" + raw[4:], "magic"),          # float dtype byte
    (lambda raw: raw[:2], "too short"),
])
def test_read_idx_rejects_malformed_files(tmp_path, corrupt, message):
    path = tmp_path / "images"
    path.write_bytes(corrupt(idx_bytes(np.zeros((2, 28, 28), np.uint8))))
    with pytest.raises(ValueError, match=message):
        _files.read_idx(path, _files.IDX_IMAGES_MAGIC)


def test_partial_idx_folder_is_reported(tmp_path, monkeypatch):
    folder = tmp_path / "data" / "mnist"
    write_idx_set(folder, small_mnist())
    (folder / "t10k-labels-idx1-ubyte").unlink()
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    with pytest.raises(FileNotFoundError, match="t10k-labels-idx1-ubyte"):
        mnist.load_data()


def test_offline_error_says_where_to_put_files(isolated):
    with pytest.raises(OSError) as info:
        mnist.load_data()
    message = str(info.value)
    assert str(isolated / ".keras" / "datasets" / "mnist.npz") in message
    assert "KILN_DATASETS" in message and "mnist/" in message
    assert "train-images-idx3-ubyte" in message
    assert not (isolated / ".keras" / "datasets" / "mnist.npz").exists()


def serve(monkeypatch, payload, seen_urls):
    def fake_urlopen(url, timeout=None):
        assert timeout is not None, "downloads must use a timeout"
        seen_urls.append(url)
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)


def test_download_is_verified_and_cached(isolated, monkeypatch):
    arrays = small_mnist()
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    payload = buffer.getvalue()
    monkeypatch.setattr(mnist, "ORIGIN_SHA256", hashlib.sha256(payload).hexdigest())
    urls = []
    serve(monkeypatch, payload, urls)
    assert_same(mnist.load_data(), arrays)
    assert urls == [mnist.ORIGIN_URL]
    assert (isolated / ".keras" / "datasets" / "mnist.npz").read_bytes() == payload


def test_download_with_wrong_sha256_is_rejected(isolated, monkeypatch):
    serve(monkeypatch, b"tampered content", [])
    with pytest.raises(OSError, match="sha256 mismatch"):
        mnist.load_data()
    cache = isolated / ".keras" / "datasets"
    assert list(cache.iterdir()) == []  # neither the file nor a partial download remains


def test_canonical_origin_and_hash():
    assert mnist.ORIGIN_URL == "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
    assert mnist.ORIGIN_SHA256 == "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


@pytest.mark.skipif(not (REAL_DATASETS and (Path(REAL_DATASETS) / "mnist").is_dir()),
                    reason="real MNIST not present (set KILN_DATASETS)")
def test_real_mnist_from_idx(monkeypatch):
    monkeypatch.setenv("KILN_DATASETS", REAL_DATASETS)
    (x_train, y_train), (x_test, y_test) = mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and y_train.shape == (60000,)
    assert x_test.shape == (10000, 28, 28) and y_test.shape == (10000,)
    assert {a.dtype for a in (x_train, y_train, x_test, y_test)} == {np.dtype(np.uint8)}
    assert np.bincount(y_train, minlength=10).min() > 5000  # every class well represented
    assert np.bincount(y_test, minlength=10).min() > 800
    assert np.count_nonzero(y_train == 0) == 5923
    assert y_train[0] == 5
    assert x_train.max() == 255
