"""Shared file helpers for the dataset loaders.

Three concerns live here because both MNIST and CIFAR-10 need them:
where Keras caches datasets, downloading a file only if its sha256 matches,
and reading the IDX format MNIST is distributed in. Nothing in this module
unpickles anything.
"""

import gzip
import hashlib
import os
import tarfile
import tempfile
import urllib.request
from pathlib import Path, PurePosixPath

import numpy as np

# Seconds to wait on a stalled connection before giving up; a loader that
# hangs forever offline is worse than one that fails with instructions.
DOWNLOAD_TIMEOUT_SECONDS = 60

# IDX magic numbers: two zero bytes, a dtype byte (0x08 = unsigned byte) and
# the number of dimensions (3 for an image stack, 1 for a label vector).
IDX_IMAGES_MAGIC = 0x00000803
IDX_LABELS_MAGIC = 0x00000801
_IDX_UBYTE = 0x08


class DownloadError(OSError):
    """A dataset file could not be fetched, or arrived with the wrong hash."""


def keras_cache_dir():
    """Returns the folder Keras caches datasets in.

    Keras uses `$KERAS_HOME/datasets` when `KERAS_HOME` is set, and
    `~/.keras/datasets` otherwise; sharing it means a dataset Keras already
    downloaded is reused instead of fetched again.

    Returns:
        A `pathlib.Path` (not created).
    """
    keras_home = os.environ.get("KERAS_HOME")
    base = Path(keras_home) if keras_home else Path(os.path.expanduser("~")) / ".keras"
    return base / "datasets"


def kiln_datasets_dir(name):
    """Returns `$KILN_DATASETS/<name>`, or None when `KILN_DATASETS` is unset.

    Args:
        name: Sub-folder for one dataset, e.g. `"mnist"`.
    """
    root = os.environ.get("KILN_DATASETS")
    return Path(root) / name if root else None


def sha256_of(path):
    """Returns the hex sha256 digest of the file at `path`."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_verified(url, destination, expected_sha256, timeout=DOWNLOAD_TIMEOUT_SECONDS,
                      algorithm="sha256"):
    """Downloads `url` to `destination`, keeping it only if its digest matches.

    The bytes go to a temporary file next to `destination` and are renamed
    into place after verification, so an interrupted or tampered download
    never leaves a file that a later call would trust.

    Args:
        url: Address to fetch.
        destination: Final path of the file.
        expected_sha256: Hex digest the file must have.
        timeout: Seconds before a stalled connection is abandoned.
        algorithm: `hashlib` name of the digest; `"md5"` for the few files Keras itself
            only knows the md5 of (the word index files).

    Returns:
        `destination` as a `pathlib.Path`.

    Raises:
        DownloadError: the fetch failed or the digest did not match.
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = tempfile.mkstemp(prefix=destination.name + ".", suffix=".part",
                                   dir=destination.parent)
    try:
        digest = hashlib.new(algorithm)
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    for chunk in iter(lambda: response.read(1 << 20), b""):
                        digest.update(chunk)
                        out.write(chunk)
            except (OSError, ValueError) as err:  # URLError is an OSError
                raise DownloadError(f"could not download {url}: {err}") from err
        if digest.hexdigest() != expected_sha256:
            raise DownloadError(
                f"{algorithm} mismatch for {url}: expected {expected_sha256}, "
                f"got {digest.hexdigest()}; the file was discarded")
        os.replace(partial, destination)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return destination


def extract_tar_safely(archive, target_dir):
    """Extracts a tar archive, refusing members that could escape `target_dir`.

    Only regular files and folders are accepted: absolute names, `..`
    components, links and device files are rejected before anything is
    written, because a tampered archive could otherwise overwrite arbitrary
    files.

    Args:
        archive: Path of the `.tar`/`.tar.gz` file.
        target_dir: Folder to extract into (created if missing).

    Raises:
        ValueError: a member has an unsafe name or type.
    """
    target_dir = Path(target_dir)
    target_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:*") as tar:
        members = tar.getmembers()
        for member in members:
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts or member.name.startswith("\\"):
                raise ValueError(f"{archive}: refusing unsafe member path {member.name!r}")
            if not (member.isfile() or member.isdir()):
                raise ValueError(f"{archive}: refusing non-regular member {member.name!r}")
        # The "data" filter repeats these checks inside tarfile itself.
        tar.extractall(target_dir, members=members, filter="data")


def find_existing(directory, names):
    """Returns the first of `names` (or its `.gz` twin) present in `directory`.

    Args:
        directory: Folder to look in.
        names: Candidate file names, most preferred first.

    Returns:
        A `pathlib.Path`, or None when none exists.
    """
    for name in names:
        for candidate in (directory / name, directory / (name + ".gz")):
            if candidate.is_file():
                return candidate
    return None


def read_idx(path, expected_magic):
    """Reads an IDX file of unsigned bytes (plain or gzipped).

    Args:
        path: File to read; a `.gz` suffix means gzip-compressed.
        expected_magic: `IDX_IMAGES_MAGIC` or `IDX_LABELS_MAGIC`.

    Returns:
        A uint8 array shaped by the file's header.

    Raises:
        ValueError: wrong magic number, dtype, or a length that does not
            match the header (e.g. a truncated download).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except gzip.BadGzipFile as err:
        raise ValueError(f"{path}: not a valid gzip file ({err})") from err
    if len(raw) < 4:
        raise ValueError(f"{path}: too short for an IDX header ({len(raw)} bytes)")
    magic = int.from_bytes(raw[:4], "big")
    if magic != expected_magic:
        raise ValueError(
            f"{path}: bad IDX magic number 0x{magic:08x}, expected 0x{expected_magic:08x} "
            f"(unsigned-byte {'images' if expected_magic == IDX_IMAGES_MAGIC else 'labels'}, "
            f"dtype byte 0x{_IDX_UBYTE:02x}, {expected_magic & 0xFF} dimension(s))")
    ndim = magic & 0xFF
    header_len = 4 + 4 * ndim
    if len(raw) < header_len:
        raise ValueError(f"{path}: truncated IDX header, expected {header_len} bytes")
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    expected_len = header_len + int(np.prod(dims, dtype=np.int64))
    if len(raw) != expected_len:
        raise ValueError(
            f"{path}: IDX header announces shape {dims}, so the file should be "
            f"{expected_len} bytes, but it is {len(raw)} bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=header_len).reshape(dims).copy()
