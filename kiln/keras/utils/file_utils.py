"""`keras.utils.get_file`: a file from the Keras cache, downloaded there if missing.

The cache is Keras's own (`$KERAS_HOME` or `~/.keras`, then `cache_subdir`), so a file Keras
already fetched is reused. A download goes to a temporary file renamed into place only once
complete (and, when a hash is given, verified), so an interrupted fetch never leaves a file a
later call would trust. Archives (tar, tar.gz, tar.bz2, zip) are extracted where Keras 3 puts
them; members that would land outside that folder (absolute paths, `..`, links out) are
refused.
"""

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import warnings
import zipfile

# Seconds to wait on a stalled connection; a script that hangs forever offline is worse than
# one that fails with the address it could not reach.
DOWNLOAD_TIMEOUT_SECONDS = 60


def _keras_home():
    keras_home = os.environ.get("KERAS_HOME")
    if keras_home:
        return os.path.expanduser(keras_home)
    return os.path.join(os.path.expanduser("~"), ".keras")


def _algorithm(file_hash, hash_algorithm):
    """Keras's rule: "auto" is sha256 for a 64-digit hash, else md5."""
    if hash_algorithm in ("sha256", "md5"):
        return hash_algorithm
    if hash_algorithm != "auto":
        raise ValueError(f"get_file: argument hash_algorithm must be 'auto', 'sha256' or "
                         f"'md5', got {hash_algorithm!r}")
    return "sha256" if len(file_hash) == 64 else "md5"


def hash_file(path, algorithm="sha256", chunk_size=1 << 20):
    """Returns the hex digest of the file at `path` (`"sha256"` or `"md5"`)."""
    digest = hashlib.new("sha256" if algorithm == "auto" else algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def validate_file(fpath, file_hash, algorithm="auto", chunk_size=1 << 20):
    """Whether the file at `fpath` has the sha256 or md5 hex digest `file_hash` ("auto":
    sha256 for a 64-digit hash, else md5, as Keras)."""
    algorithm = _algorithm(file_hash, algorithm)
    return hash_file(fpath, algorithm, chunk_size) == str(file_hash)


def _inside(folder, member_path):
    folder = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(folder, member_path))
    return os.path.commonpath([folder, target]) == folder


def _safe_tar_members(archive, folder):
    for member in archive.getmembers():
        links_out = (member.issym() or member.islnk()) and not _inside(
            folder, os.path.join(os.path.dirname(member.name), member.linkname))
        if not _inside(folder, member.name) or links_out or member.isdev():
            raise ValueError(f"extract_archive: {archive.name}: member {member.name!r} would "
                             f"be written outside {folder}; refused")
        yield member


def extract_archive(file_path, path=".", archive_format="auto"):
    """Extracts the tar (also .tar.gz / .tar.bz2) or zip archive `file_path` into `path`, as
    Keras's; `archive_format` is "auto" (tar, then zip), "tar", "zip", a list of them or None.
    Returns whether the file was an archive of one of those formats (and was extracted)."""
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    file_path, path = os.fspath(file_path), os.fspath(path)
    existed = os.path.exists(path)
    for kind in formats:
        if kind not in ("tar", "zip"):
            raise ValueError(f"extract_archive: argument archive_format must be 'auto', 'tar', "
                             f"'zip', a list of them or None, got {archive_format!r}")
        if kind == "tar" and tarfile.is_tarfile(file_path):
            opener = tarfile.open
        elif kind == "zip" and zipfile.is_zipfile(file_path):
            opener = zipfile.ZipFile
        else:
            continue
        try:
            with opener(file_path) as archive:
                if kind == "tar":
                    archive.extractall(path, members=list(_safe_tar_members(archive, path)))
                else:
                    for name in archive.namelist():
                        if not _inside(path, name):
                            raise ValueError(f"extract_archive: {file_path}: member {name!r} "
                                             f"would be written outside {path}; refused")
                    archive.extractall(path)
        except (tarfile.TarError, zipfile.BadZipFile, OSError, ValueError):
            if not existed and os.path.isdir(path):  # no half-extracted folder is left
                shutil.rmtree(path)
            raise
        return True
    return False


def _download(origin, destination):
    directory = os.path.dirname(destination)
    fd, partial = tempfile.mkstemp(prefix=os.path.basename(destination) + ".",
                                   suffix=".part", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(origin, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
                    for chunk in iter(lambda: response.read(1 << 20), b""):
                        out.write(chunk)
            except (OSError, ValueError) as err:  # URLError is an OSError
                raise OSError(f"get_file: could not download {origin}: {err}") from err
        os.replace(partial, destination)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def get_file(fname=None, origin=None, untar=False, md5_hash=None, file_hash=None,
             cache_subdir="datasets", hash_algorithm="auto", extract=False,
             archive_format="auto", cache_dir=None, force_download=False):
    """Returns the local path of a file, downloading it into the Keras cache if needed.

    Args:
        fname: File name in the cache (an absolute path is used as is); None takes the last
            part of `origin`'s path.
        origin: URL to download from when the file is not cached.
        untar: Keras 2's `extract=True, archive_format="tar"`.
        extract: Extract the downloaded archive and return the folder it went to, named as
            Keras 3 names it: `<fname up to its first dot>_extracted` (the archive keeps
            `fname`), or `fname` itself when it has no dot or comes from the URL (the archive
            is then `<fname>_archive`).
        archive_format: "auto" (tar, then zip), "tar", "zip", a list of them or None.
        md5_hash: Keras's older spelling of `file_hash` with md5.
        file_hash: Expected sha256 or md5 hex digest; a cached file that does not match is
            downloaded again, a download that does not match is an error.
        cache_subdir: Folder under the cache (`"datasets"`, as Keras).
        hash_algorithm: `"auto"` (by the digest's length), `"sha256"` or `"md5"`.
        cache_dir: The cache; None is `$KERAS_HOME` or `~/.keras`.
        force_download: Download even when the file is cached.

    Returns:
        The path of the file (or of the extracted folder), a string.

    Raises:
        ValueError: neither `fname` nor `origin`, a downloaded file with the wrong hash, or
            an archive member that would land outside the extraction folder.
        OSError: the file is not cached and could not be downloaded (the message says where
            to put it by hand).
    """
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    given_name = fname is not None
    if fname is None:
        if not origin:
            raise ValueError("get_file: give argument fname or origin, got neither")
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
    fname = os.fspath(fname)
    directory = os.path.join(os.path.expanduser(cache_dir) if cache_dir else _keras_home(),
                             cache_subdir)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, fname)
    algorithm = _algorithm(file_hash, hash_algorithm) if file_hash else None
    if untar or extract:
        if given_name and "." in fname:
            folder = os.path.join(directory, fname[:fname.find(".")] + "_extracted")
        else:
            folder, path = path, path + "_archive"
        _fetch(origin, path, file_hash, algorithm, force_download)
        if not extract_archive(path, folder, "tar" if untar else archive_format):
            warnings.warn(f"get_file: {path} is not a {archive_format} archive; nothing was "
                          "extracted", stacklevel=2)
        return folder
    _fetch(origin, path, file_hash, algorithm, force_download)
    return path


def _fetch(origin, path, file_hash, algorithm, force_download):
    """The file at `path`, kept when cached with the right hash, else downloaded."""
    if os.path.exists(path) and not force_download:
        if algorithm is None or hash_file(path, algorithm) == file_hash:
            return path
        warnings.warn(f"get_file: the cached {path} does not have the expected {algorithm} "
                      f"hash; downloading it again", stacklevel=3)
    if not origin:
        raise ValueError(f"get_file: {path} is not cached and argument origin is empty")
    try:
        _download(origin, path)
    except OSError as err:
        wanted = f" (its {algorithm} hash must be {file_hash})" if algorithm else ""
        raise OSError(f"{err}\nWithout network access, download {origin} elsewhere and put "
                      f"it at {path}{wanted}") from err
    if algorithm is not None and hash_file(path, algorithm) != file_hash:
        os.remove(path)
        raise ValueError(f"get_file: the file downloaded from {origin} does not have the "
                         f"expected {algorithm} hash {file_hash}; it was removed")
