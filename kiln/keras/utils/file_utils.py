"""`keras.utils.get_file`: a file from the Keras cache, downloaded there if missing.

The cache is Keras's own (`$KERAS_HOME` or `~/.keras`, then `cache_subdir`), so a file Keras
already fetched is reused. A download goes to a temporary file renamed into place only once
complete (and, when a hash is given, verified), so an interrupted fetch never leaves a file a
later call would trust. Archive extraction (`untar` / `extract`) is not supported.
"""

import hashlib
import os
import tempfile
import urllib.parse
import urllib.request
import warnings

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
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


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
        untar, extract, archive_format: Archive extraction; not supported (must be False).
        md5_hash: Keras's older spelling of `file_hash` with md5.
        file_hash: Expected sha256 or md5 hex digest; a cached file that does not match is
            downloaded again, a download that does not match is an error.
        cache_subdir: Folder under the cache (`"datasets"`, as Keras).
        hash_algorithm: `"auto"` (by the digest's length), `"sha256"` or `"md5"`.
        cache_dir: The cache; None is `$KERAS_HOME` or `~/.keras`.
        force_download: Download even when the file is cached.

    Returns:
        The path of the file, a string.

    Raises:
        ValueError: neither `fname` nor `origin`, extraction asked for, or a downloaded
            file with the wrong hash.
        OSError: the file is not cached and could not be downloaded.
    """
    if untar or extract:
        raise ValueError("get_file: arguments untar / extract are not supported by kiln; "
                         "expected False (extract the returned archive yourself)")
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    if fname is None:
        if not origin:
            raise ValueError("get_file: give argument fname or origin, got neither")
        fname = os.path.basename(urllib.parse.urlsplit(origin).path)
    directory = os.path.join(os.path.expanduser(cache_dir) if cache_dir else _keras_home(),
                             cache_subdir)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, fname)
    algorithm = _algorithm(file_hash, hash_algorithm) if file_hash else None

    if os.path.exists(path) and not force_download:
        if algorithm is None or hash_file(path, algorithm) == file_hash:
            return path
        warnings.warn(f"get_file: the cached {path} does not have the expected {algorithm} "
                      f"hash; downloading it again", stacklevel=2)
    if not origin:
        raise ValueError(f"get_file: {path} is not cached and argument origin is empty")
    _download(origin, path)
    if algorithm is not None and hash_file(path, algorithm) != file_hash:
        os.remove(path)
        raise ValueError(f"get_file: the file downloaded from {origin} does not have the "
                         f"expected {algorithm} hash {file_hash}; it was removed")
    return path
