"""keras.datasets.imdb / reuters against real Keras 3 on the same small files.

Both libraries read the same `.npz` from one temporary Keras cache (Keras through its own
`get_file`, with the hash check off since the files are made here), for several argument
combinations; the outputs must be equal in values, dtypes, shapes and element types. HOME,
KERAS_HOME and KILN_DATASETS point into tmp_path and urllib's urlopen is replaced, so neither
the developer's ~/.keras nor the network is used.
"""

import hashlib
import io
import json
import os
import urllib.error
import urllib.request

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras_imdb = pytest.importorskip("keras.src.datasets.imdb")
keras_reuters = pytest.importorskip("keras.src.datasets.reuters")
from keras.src.utils import file_utils  # noqa: E402

from kiln.keras.datasets import imdb, reuters  # noqa: E402


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """The Keras datasets folder both libraries read; no network."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.delenv("KILN_DATASETS", raising=False)

    def offline(url, *args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    keras_home = home / ".keras"

    def keras_get_file(fname, origin, file_hash=None):
        return file_utils.get_file(fname=fname, origin=origin, cache_dir=str(keras_home))

    for module in (keras_imdb, keras_reuters):
        monkeypatch.setattr(module, "get_file", keras_get_file)
    folder = keras_home / "datasets"
    folder.mkdir(parents=True)
    return folder


def sequences(rng, count, vocabulary, longest):
    array = np.empty(count, dtype=object)
    for i in range(count):
        array[i] = [int(v) for v in rng.integers(1, vocabulary, rng.integers(1, longest))]
    return array


def write_imdb(path, seed=0):
    rng = np.random.default_rng(seed)
    np.savez(path, x_train=sequences(rng, 30, 60, 25), y_train=rng.integers(0, 2, 30),
             x_test=sequences(rng, 20, 80, 25), y_test=rng.integers(0, 2, 20))


def write_reuters(path, seed=0):
    rng = np.random.default_rng(seed)
    np.savez(path, x=sequences(rng, 47, 70, 30), y=rng.integers(0, 46, 47))


def assert_same(got, want):
    for got_part, want_part in zip(sum(got, ()), sum(want, ()), strict=True):
        assert got_part.dtype == want_part.dtype and got_part.shape == want_part.shape
        for a, b in zip(got_part.ravel(), want_part.ravel(), strict=True):
            assert type(a) is type(b) and a == b


ARGUMENTS = [
    {},
    {"seed": 7},
    {"num_words": 30},
    {"num_words": 30, "skip_top": 5},
    {"num_words": 30, "skip_top": 5, "oov_char": None},
    {"maxlen": 12},
    {"maxlen": 12, "num_words": 40, "seed": 1},
    {"start_char": None},
    {"start_char": None, "index_from": 0},
    {"start_char": 9, "oov_char": 4, "index_from": 10, "num_words": 50},
]


@pytest.mark.parametrize("kwargs", ARGUMENTS, ids=str)
def test_imdb_equals_keras(cache, kwargs):
    write_imdb(cache / "imdb.npz")
    assert_same(imdb.load_data(**kwargs), keras_imdb.load_data(**kwargs))


@pytest.mark.parametrize("kwargs", ARGUMENTS + [{"test_split": 0.5}, {"test_split": 0.0}],
                         ids=str)
def test_reuters_equals_keras(cache, kwargs):
    write_reuters(cache / "reuters.npz")
    assert_same(reuters.load_data(**kwargs), keras_reuters.load_data(**kwargs))


def test_path_relative_to_the_keras_cache(cache):
    write_imdb(cache / "mine.npz", seed=3)
    assert_same(imdb.load_data(path="mine.npz", num_words=20),
                keras_imdb.load_data(path="mine.npz", num_words=20))


def test_equal_length_sequences_become_a_2d_object_array_as_in_keras(cache):
    """Keras ends with np.array(lists, dtype=object): equal lengths make it 2-D."""
    x = np.empty(4, dtype=object)
    for i in range(4):
        x[i] = [i + 1, i + 2]
    np.savez(cache / "imdb.npz", x_train=x, y_train=np.arange(4), x_test=x[:2],
             y_test=np.arange(2))
    got = imdb.load_data()
    assert got[0][0].shape == (4, 3)
    assert_same(got, keras_imdb.load_data())


def test_maxlen_keeping_nothing(cache):
    write_imdb(cache / "imdb.npz")
    with pytest.raises(ValueError, match="maxlen=1"):
        imdb.load_data(maxlen=1)
    with pytest.raises(ValueError, match="maxlen=1"):
        keras_imdb.load_data(maxlen=1)


def test_keras1_nb_words(cache):
    write_imdb(cache / "imdb.npz")
    write_reuters(cache / "reuters.npz")
    with pytest.warns(DeprecationWarning, match="num_words"):
        assert_same(imdb.load_data(nb_words=25), keras_imdb.load_data(num_words=25))
    with pytest.warns(DeprecationWarning, match="num_words"):
        assert_same(reuters.load_data(nb_words=25), keras_reuters.load_data(num_words=25))
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        reuters.load_data(bogus=1)


def test_kiln_datasets_folder(tmp_path, monkeypatch):
    write_reuters(tmp_path / "reuters.npz", seed=5)
    (tmp_path / "data" / "reuters").mkdir(parents=True)
    write_reuters(tmp_path / "data" / "reuters" / "reuters.npz", seed=5)
    monkeypatch.setenv("KILN_DATASETS", str(tmp_path / "data"))
    got = reuters.load_data()
    monkeypatch.setattr(keras_reuters, "get_file", lambda *a, **k: str(tmp_path / "reuters.npz"))
    assert_same(got, keras_reuters.load_data())


def test_word_index(cache):
    words = {"the": 1, "and": 2, "a": 3, "été": 4}
    (cache / "imdb_word_index.json").write_text(json.dumps(words), encoding="utf-8")
    (cache / "reuters_word_index.json").write_text(json.dumps(words), encoding="utf-8")
    assert imdb.get_word_index() == keras_imdb.get_word_index() == words
    assert reuters.get_word_index() == keras_reuters.get_word_index() == words
    assert reuters.get_label_names() == keras_reuters.get_label_names()


def test_malicious_npz_is_refused_without_running(cache, tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    x = np.empty(2, dtype=object)
    x[0], x[1] = [1, 2], Payload()
    np.savez(cache / "imdb.npz", x_train=x, y_train=np.zeros(2, np.int64),
             x_test=x, y_test=np.zeros(2, np.int64))
    with pytest.raises(ValueError, match=r"imdb\.npz: refused member x_train\.npy: "
                                         r"refusing global (posix|os)\.system"):
        imdb.load_data()
    assert not marker.exists()


def test_offline_error_says_where_to_put_files(cache):
    with pytest.raises(OSError) as info:
        imdb.load_data()
    message = str(info.value)
    assert str(cache / "imdb.npz") in message and "KILN_DATASETS" in message
    assert "imdb/imdb.npz" in message and imdb.ORIGIN_SHA256 in message
    assert list(cache.iterdir()) == []


def serve(monkeypatch, payloads, seen):
    def fake_urlopen(url, timeout=None):
        assert timeout is not None, "downloads must use a timeout"
        seen.append(url)
        return io.BytesIO(payloads[url.rsplit("/", 1)[1]])

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)


def test_download_like_keras(cache, tmp_path, monkeypatch):
    write_imdb(tmp_path / "imdb.npz")
    npz = (tmp_path / "imdb.npz").read_bytes()
    words = json.dumps({"movie": 1}).encode()
    monkeypatch.setattr(imdb, "ORIGIN_SHA256", hashlib.sha256(npz).hexdigest())
    monkeypatch.setattr(imdb, "WORD_INDEX_MD5", hashlib.md5(words).hexdigest())
    seen = []
    serve(monkeypatch, {"imdb.npz": npz, "imdb_word_index.json": words}, seen)
    got = imdb.load_data(path="renamed.npz")
    assert seen == ["https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz"]
    assert (cache / "renamed.npz").read_bytes() == npz
    assert imdb.get_word_index() == {"movie": 1}
    assert (cache / "imdb_word_index.json").read_bytes() == words
    assert_same(got, keras_imdb.load_data(path="renamed.npz"))


def test_download_with_wrong_digest_is_rejected(cache, monkeypatch):
    serve(monkeypatch, {"reuters_word_index.json": b"{}"}, [])
    with pytest.raises(OSError, match="md5 mismatch"):
        reuters.get_word_index()
    assert list(cache.iterdir()) == []


def test_canonical_origins_and_hashes():
    """The digests Keras itself checks."""
    assert imdb.ORIGIN_SHA256 == "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
    assert reuters.ORIGIN_SHA256 == (
        "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916")
    assert imdb.WORD_INDEX_MD5 == "bfafd718b763782e994055a2d397834f"
    assert reuters.WORD_INDEX_MD5 == "4d44cc38712099c9e383dc6e5f11a921"
