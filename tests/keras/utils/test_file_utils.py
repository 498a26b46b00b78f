"""keras.utils.get_file (and Keras 2's keras.utils.data_utils path): the Keras cache, downloads
through a stub urlopen (no network), hash checks, archives extracted where Keras 3 puts them."""

import hashlib
import io
import os
import sys
import tarfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
from keras_oracle import real_keras  # noqa: E402

from kiln.keras import utils  # noqa: E402
from kiln.keras.utils import data_utils, file_utils, np_utils  # noqa: E402

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
    with pytest.raises(ValueError, match="fname or origin"):
        utils.get_file()
    with pytest.raises(ValueError, match="hash_algorithm"):
        utils.get_file("a", ORIGIN, file_hash="00", hash_algorithm="sha1")


def test_np_utils_is_keras2s_path_of_to_categorical():
    assert np_utils.to_categorical is utils.to_categorical
    assert np_utils.normalize is utils.normalize


def test_offline_the_error_says_where_to_put_the_file(keras_home, server):
    sha256 = "a" * 64
    with pytest.raises(OSError) as raised:
        utils.get_file("corpus.txt", ORIGIN, file_hash=sha256)
    message = str(raised.value)
    assert ORIGIN in message and str(keras_home / "datasets" / "corpus.txt") in message
    assert f"sha256 hash must be {sha256}" in message


def test_validate_file_is_keras2s_data_utils_one(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc")
    assert data_utils.validate_file(path, hashlib.sha256(b"abc").hexdigest())
    assert data_utils.validate_file(path, hashlib.md5(b"abc").hexdigest())  # auto: by length
    assert not data_utils.validate_file(path, hashlib.md5(b"abd").hexdigest(), "md5")


def write_archive(path, kind, members):
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        return
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize("fname, url_name, kind, untar", [
    ("data.tar.gz", "x.tar.gz", "tar", False),   # -> data_extracted/, archive data.tar.gz
    ("data", "x.zip", "zip", False),             # -> data/, archive data_archive
    (None, "bundle.zip", "zip", False),          # -> bundle.zip/, archive bundle.zip_archive
    ("cifar-10-batches-py", "c.tar.gz", "tar", True),  # Keras 2's untar=True
])
def test_archives_are_extracted_where_keras_3_puts_them(tmp_path, server, fname, url_name,
                                                        kind, untar):
    keras = real_keras()
    files, _ = server
    origin = f"https://example.invalid/{url_name}"
    members = {"top.txt": b"top", "folder/inner.txt": b"inner"}
    source = tmp_path / "source"
    write_archive(source, kind, members)
    files[origin] = source.read_bytes()
    kwargs = {"untar": True} if untar else {"extract": True}
    ours = Path(utils.get_file(fname, origin, cache_dir=str(tmp_path / "ours"), **kwargs))
    assert (ours / "folder" / "inner.txt").read_bytes() == b"inner"
    assert (ours / "top.txt").read_bytes() == b"top"

    # Keras 3 given the same archive already in its cache (so it downloads nothing)
    theirs_cache = tmp_path / "theirs" / "datasets"
    theirs_cache.mkdir(parents=True)
    archive_name = [p.name for p in (tmp_path / "ours" / "datasets").iterdir() if p.is_file()]
    assert len(archive_name) == 1
    (theirs_cache / archive_name[0]).write_bytes(source.read_bytes())
    theirs = keras.utils.get_file(fname, origin, cache_dir=str(tmp_path / "theirs"), **kwargs)
    assert Path(theirs).relative_to(tmp_path / "theirs") == ours.relative_to(tmp_path / "ours")
    assert sorted(p.name for p in Path(theirs).rglob("*")) == sorted(
        p.name for p in ours.rglob("*"))


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_archive_members_outside_the_folder_are_refused(tmp_path, kind):
    archive = tmp_path / f"evil.{kind}"
    write_archive(archive, kind, {"ok.txt": b"ok", "../escaped.txt": b"x"})
    with pytest.raises(ValueError, match=r"escaped.txt.*outside"):
        file_utils.extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "out").exists()
    other = "zip" if kind == "tar" else "tar"  # not that format: nothing extracted
    assert not file_utils.extract_archive(archive, tmp_path / "out2", archive_format=other)
