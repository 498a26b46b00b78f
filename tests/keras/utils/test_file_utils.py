"""keras.utils.get_file (and Keras 2's keras.utils.data_utils path): the Keras cache, downloads
through a stub urlopen (no network), hash checks."""

import hashlib
import io
import os
import urllib.error
import urllib.request

import pytest

from kiln.keras import utils
from kiln.keras.utils import data_utils, file_utils, np_utils

ORIGIN = "https://example.invalid/files/corpus.txt"


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    return tmp_path / "keras_home"


@pytest.fixture
def server(monkeypatch):
    """urlopen serving `files[url]`; every request is recorded."""
    files, requests = {}, []

    def urlopen(url, timeout=None):
        requests.append(url)
        if url not in files:
            raise urllib.error.URLError("no such file")
        return io.BytesIO(files[url])

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    return files, requests


def test_a_cached_file_is_returned_without_downloading(keras_home, server):
    cached = keras_home / "datasets" / "nietzsche.txt"
    cached.parent.mkdir(parents=True)
    cached.write_text("already here")
    path = data_utils.get_file("nietzsche.txt", origin=ORIGIN)
    assert path == str(cached) and server[1] == []
    assert utils.get_file is data_utils.get_file is file_utils.get_file


def test_a_missing_file_is_downloaded_into_the_cache(keras_home, server):
    files, requests = server
    files[ORIGIN] = b"some text"
    path = utils.get_file(origin=ORIGIN)  # the name comes from the URL
    assert path == str(keras_home / "datasets" / "corpus.txt")
    assert open(path, "rb").read() == b"some text" and requests == [ORIGIN]
    assert os.listdir(keras_home / "datasets") == ["corpus.txt"]  # no partial file left
    other = utils.get_file("x.txt", ORIGIN, cache_dir=str(keras_home / "elsewhere"),
                           cache_subdir="sub")
    assert other == str(keras_home / "elsewhere" / "sub" / "x.txt")


def test_hashes_are_checked(keras_home, server):
    files, requests = server
    files[ORIGIN] = b"good"
    sha256 = hashlib.sha256(b"good").hexdigest()
    md5 = hashlib.md5(b"good").hexdigest()
    cached = keras_home / "datasets" / "corpus.txt"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"stale")
    with pytest.warns(UserWarning, match="hash"):
        utils.get_file("corpus.txt", ORIGIN, file_hash=sha256)
    assert cached.read_bytes() == b"good" and len(requests) == 1
    assert utils.get_file("corpus.txt", ORIGIN, md5_hash=md5) == str(cached)
    assert len(requests) == 1
    with pytest.raises(ValueError, match="hash"):
        utils.get_file("other.txt", ORIGIN, file_hash="0" * 64)
    assert not (keras_home / "datasets" / "other.txt").exists()


def test_errors_name_the_problem(keras_home, server):
    with pytest.raises(OSError, match="could not download"):
        utils.get_file("absent.txt", "https://example.invalid/absent.txt")
    with pytest.raises(ValueError, match="extract"):
        utils.get_file("a.tar.gz", ORIGIN, extract=True)
    with pytest.raises(ValueError, match="fname or origin"):
        utils.get_file()
    with pytest.raises(ValueError, match="hash_algorithm"):
        utils.get_file("a", ORIGIN, file_hash="00", hash_algorithm="sha1")


def test_np_utils_is_keras2s_path_of_to_categorical():
    assert np_utils.to_categorical is utils.to_categorical
    assert np_utils.normalize is utils.normalize
