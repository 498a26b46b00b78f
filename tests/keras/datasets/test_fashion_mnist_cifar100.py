"""keras.datasets.fashion_mnist and cifar100 read Keras's own cache files, written here in
their real formats (gzipped IDX; CIFAR-100's pickled dicts) into a temporary Keras cache with
the network disabled; anything else is refused with an error naming the file."""

import gzip
import os
import pickle
import struct
import urllib.error
import urllib.request

import numpy as np
import pytest

from kiln.keras import backend
from kiln.keras.datasets import cifar100, fashion_mnist


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """An empty Keras cache (KERAS_HOME), channels_last, no network."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    monkeypatch.delenv("KILN_DATASETS", raising=False)
    backend._reset_for_tests()  # an empty KERAS_HOME: the default channels_last

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    yield tmp_path / "keras" / "datasets"
    backend._reset_for_tests()


# -- Fashion-MNIST -----------------------------------------------------------------------------
def write_idx_gz(path, array, magic):
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def write_fashion(folder, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {"x_train": rng.integers(0, 256, (5, 28, 28)), "y_train": rng.integers(0, 10, 5),
              "x_test": rng.integers(0, 256, (3, 28, 28)), "y_test": rng.integers(0, 10, 3)}
    for key, (name, _) in fashion_mnist.FILES.items():
        write_idx_gz(folder / name, arrays[key], 0x803 if key.startswith("x") else 0x801)
    return arrays


def test_fashion_mnist_reads_the_keras_cache(cache):
    arrays = write_fashion(cache / "fashion-mnist")
    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data()
    for key, got in {"x_train": x_train, "y_train": y_train, "x_test": x_test,
                     "y_test": y_test}.items():
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, arrays[key], err_msg=key)


def test_fashion_mnist_offline_says_where_to_put_the_files(cache):
    with pytest.raises(OSError, match="fashion-mnist") as info:
        fashion_mnist.load_data()
    assert "train-images-idx3-ubyte.gz" in str(info.value)


def test_fashion_mnist_refuses_a_file_of_the_wrong_kind(cache):
    write_fashion(cache / "fashion-mnist")
    labels = cache / "fashion-mnist" / "t10k-labels-idx1-ubyte.gz"
    labels.write_bytes(gzip.compress(pickle.dumps([1, 2, 3])))
    with pytest.raises(ValueError, match="t10k-labels-idx1-ubyte.gz: bad IDX magic"):
        fashion_mnist.load_data()


# -- CIFAR-100 ---------------------------------------------------------------------------------
def write_cifar100(folder, count, seed, protocol=2):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (count, 3072), dtype=np.uint8)
    fine = [int(v) for v in rng.integers(0, 100, count)]
    coarse = [int(v) for v in rng.integers(0, 20, count)]
    folder.parent.mkdir(parents=True, exist_ok=True)
    record = {b"filenames": [b"a.png"] * count, b"batch_label": b"x", b"fine_labels": fine,
              b"coarse_labels": coarse, b"data": pixels}
    folder.write_bytes(pickle.dumps(record, protocol=protocol))
    images = pixels.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return images, np.array(fine, np.uint8)[:, None], np.array(coarse, np.uint8)[:, None]


@pytest.mark.parametrize("layout", ["cifar-100-python-target/cifar-100-python",
                                    "cifar-100-python"])
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_cifar100_reads_both_label_modes(cache, layout, protocol):
    train = write_cifar100(cache / layout / "train", 4, seed=1, protocol=protocol)
    test = write_cifar100(cache / layout / "test", 2, seed=2, protocol=protocol)
    for mode, column in (("fine", 1), ("coarse", 2)):
        (x_train, y_train), (x_test, y_test) = cifar100.load_data(label_mode=mode)
        np.testing.assert_array_equal(x_train, train[0])
        np.testing.assert_array_equal(x_test, test[0])
        np.testing.assert_array_equal(y_train, train[column])
        np.testing.assert_array_equal(y_test, test[column])
        assert y_train.shape == (4, 1) and y_train.dtype == np.uint8


def test_cifar100_bad_label_mode(cache):
    with pytest.raises(ValueError, match="label_mode.*'medium'"):
        cifar100.load_data(label_mode="medium")


class Payload:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_cifar100_refuses_a_pickle_naming_globals(cache):
    folder = cache / "cifar-100-python"
    write_cifar100(folder / "train", 2, seed=1)
    (folder / "test").write_bytes(pickle.dumps({b"data": Payload()}))
    with pytest.raises(ValueError, match="test: not a safe CIFAR pickle.*refusing global"):
        cifar100.load_data()


def test_cifar100_offline_says_where_to_put_the_files(cache):
    with pytest.raises(OSError, match="cifar-100-python.tar.gz") as info:
        cifar100.load_data()
    assert str(cache / "cifar-100-python") in str(info.value)
