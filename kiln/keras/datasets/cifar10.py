"""CIFAR-10 small colour images, loaded like `keras.datasets.cifar10`.

Sources, first match wins: the Keras cache (python batches, then binary
batches), `$KILN_DATASETS/cifar10/`, then a sha256-verified download of the
python tarball. The python batches are pickles; they are read with an
unpickler that resolves no importable global (see `RestrictedUnpickler`),
so a tampered batch cannot run code.
"""

from pathlib import Path

import numpy as np

from . import _files
from ._safe_pickle import RestrictedUnpickler, load_restricted, to_uint8_array

ORIGIN_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
ORIGIN_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
ARCHIVE_NAME = "cifar-10-python.tar.gz"

PYTHON_DIR = "cifar-10-batches-py"
BINARY_DIR = "cifar-10-batches-bin"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
PIXELS_PER_IMAGE = 3 * 32 * 32  # planar: 1024 red, 1024 green, 1024 blue
NUM_CLASSES = 10

SAMPLE_DIR = "cifar10-sample"
SAMPLE_FILE = "cifar10_test_first846.npz"


def load_data():
    """Loads the CIFAR-10 dataset.

    Returns:
        Tuple of NumPy arrays: `(x_train, y_train), (x_test, y_test)`.
        `x_*` are uint8 images shaped `(num_samples, 32, 32, 3)`, or
        `(num_samples, 3, 32, 32)` when the backend's image data format is
        `"channels_first"`; `y_*` are uint8 labels 0-9 shaped
        `(num_samples, 1)`. The full dataset has 50,000 training and 10,000
        test images.

    Raises:
        OSError: no local copy exists and the download failed; the message
            says where to put the files.
        ValueError: a batch file is malformed (the message names it).
    """
    cache = _files.keras_cache_dir()
    found = _find_local_batches(cache)
    if found is None:
        try:
            _download_and_extract(cache)
        except OSError as err:
            raise OSError(_missing_data_message(cache, err)) from err
        found = _find_local_batches(cache)
        if found is None:
            raise OSError(f"{cache / ARCHIVE_NAME} did not contain {PYTHON_DIR}/{TEST_BATCH}")
    folder, read_batch, suffix = found

    train = [read_batch(folder / (name + suffix)) for name in TRAIN_BATCHES]
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    x_test, y_test = read_batch(folder / (TEST_BATCH + suffix))
    return ((_to_images(x_train), y_train.reshape(-1, 1)),
            (_to_images(x_test), y_test.reshape(-1, 1)))


def load_sample():
    """Loads the first 846 CIFAR-10 test images shipped with kiln's test data.

    Reads `$KILN_DATASETS/cifar10-sample/cifar10_test_first846.npz`, enough
    to check a reader or a few predictions, not to train.

    Returns:
        Tuple `(x_test, y_test)`: uint8 images `(846, 32, 32, 3)` and labels
        0-9 shaped `(846,)`.

    Raises:
        FileNotFoundError: `KILN_DATASETS` is unset or the file is missing.
        ValueError: the file does not hold the expected arrays.
    """
    folder = _files.kiln_datasets_dir(SAMPLE_DIR)
    if folder is None or not (folder / SAMPLE_FILE).is_file():
        where = folder / SAMPLE_FILE if folder else f"$KILN_DATASETS/{SAMPLE_DIR}/{SAMPLE_FILE}"
        raise FileNotFoundError(
            f"CIFAR-10 sample not found at {where}; set KILN_DATASETS to the folder that "
            f"contains {SAMPLE_DIR}/{SAMPLE_FILE} (arrays x_test (846, 32, 32, 3) uint8 "
            "and y_test (846,))")
    path = folder / SAMPLE_FILE
    with np.load(path, allow_pickle=False) as archive:
        if not {"x_test", "y_test"} <= set(archive.files):
            raise ValueError(f"{path}: expected arrays x_test and y_test, got {archive.files}")
        x_test, y_test = archive["x_test"], archive["y_test"]
    if x_test.dtype != np.uint8 or x_test.ndim != 4 or x_test.shape[1:] != (32, 32, 3):
        raise ValueError(f"{path}: x_test must be uint8 (N, 32, 32, 3), "
                         f"got {x_test.dtype} {x_test.shape}")
    if y_test.shape != (x_test.shape[0],):
        raise ValueError(f"{path}: y_test must be ({x_test.shape[0]},), got {y_test.shape}")
    return x_test, y_test


def read_python_batch(path):
    """Reads one pickled python batch (`data_batch_N` or `test_batch`).

    Args:
        path: The batch file: a pickled dict with `b"data"` (N, 3072) uint8
            planar RGB rows and `b"labels"` (N integers 0-9).

    Returns:
        `(pixels, labels)`: uint8 arrays shaped (N, 3072) and (N,).
    """
    with open(path, "rb") as f:
        batch = load_restricted(f, path)
    if not isinstance(batch, dict):
        raise ValueError(f"{path}: expected a pickled dict, got {type(batch).__name__}")
    # Python 2 pickles come back with bytes keys; accept str keys as well.
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    for key in ("data", "labels"):
        if key not in batch:
            raise ValueError(f"{path}: missing key {key!r}, found {sorted(map(str, batch))}")
    pixels = to_uint8_array(batch["data"], f"{path} data")
    labels = to_uint8_array(batch["labels"], f"{path} labels")
    if pixels.ndim == 1 and pixels.size % PIXELS_PER_IMAGE == 0:
        pixels = pixels.reshape(-1, PIXELS_PER_IMAGE)  # raw bytes: one row per image
    return _validated(pixels, labels, path)


def read_binary_batch(path):
    """Reads one binary batch (`data_batch_N.bin` or `test_batch.bin`).

    Args:
        path: File of 3073-byte records: a label byte, then 3072 planar
            RGB pixel bytes.

    Returns:
        `(pixels, labels)`: uint8 arrays shaped (N, 3072) and (N,).
    """
    raw = np.fromfile(path, dtype=np.uint8)
    record = 1 + PIXELS_PER_IMAGE
    if raw.size == 0 or raw.size % record:
        raise ValueError(f"{path}: size {raw.size} bytes is not a positive multiple "
                         f"of the {record}-byte CIFAR-10 record")
    records = raw.reshape(-1, record)
    return _validated(records[:, 1:].copy(), records[:, 0].copy(), path)


def _find_local_batches(cache):
    """Returns `(folder, reader, suffix)` for the first complete local copy."""
    kiln_dir = _files.kiln_datasets_dir("cifar10")
    python, binary = (read_python_batch, ""), (read_binary_batch, ".bin")
    candidates = [
        (cache / PYTHON_DIR, python),
        # Keras >= 3.5 extracts into "<name>-target/" next to the archive.
        (cache / f"{PYTHON_DIR}-target" / PYTHON_DIR, python),
        (cache / BINARY_DIR, binary),
    ]
    if kiln_dir is not None:
        candidates += [(kiln_dir / BINARY_DIR, binary), (kiln_dir, binary),
                       (kiln_dir / PYTHON_DIR, python), (kiln_dir, python)]
    for folder, (reader, suffix) in candidates:
        names = [name + suffix for name in TRAIN_BATCHES + (TEST_BATCH,)]
        present = [name for name in names if (folder / name).is_file()]
        if len(present) == len(names):
            return folder, reader, suffix
        if present:
            # A half-populated folder is reported instead of silently skipped.
            missing = sorted(set(names) - set(present))
            raise FileNotFoundError(f"{folder} holds only part of CIFAR-10; "
                                    f"missing {', '.join(missing)}")
    return None


def _download_and_extract(cache):
    archive = cache / ARCHIVE_NAME
    # Reuse an archive left by an earlier run, but only if it verifies.
    if not (archive.is_file() and _files.sha256_of(archive) == ORIGIN_SHA256):
        _files.download_verified(ORIGIN_URL, archive, ORIGIN_SHA256)
    _files.extract_tar_safely(archive, cache)


def _missing_data_message(cache, cause):
    kiln_dir = _files.kiln_datasets_dir("cifar10") or Path("$KILN_DATASETS/cifar10")
    return (
        f"CIFAR-10 is not available locally and could not be downloaded ({cause}).\n"
        "Provide it in one of these ways:\n"
        f"  1. put {ARCHIVE_NAME} (sha256 {ORIGIN_SHA256}, from {ORIGIN_URL}) at "
        f"{cache / ARCHIVE_NAME}, or extract it so that {cache / PYTHON_DIR}/ holds "
        "data_batch_1..data_batch_5 and test_batch\n"
        f"  2. put the binary version (data_batch_1.bin..data_batch_5.bin, test_batch.bin) "
        f"in {cache / BINARY_DIR}/ or {kiln_dir}/ (set KILN_DATASETS)")


def _validated(pixels, labels, path):
    if pixels.ndim != 2 or pixels.shape[1] != PIXELS_PER_IMAGE:
        raise ValueError(f"{path}: data must be (N, {PIXELS_PER_IMAGE}), got {pixels.shape}")
    if labels.shape != (pixels.shape[0],):
        raise ValueError(f"{path}: expected {pixels.shape[0]} labels, got shape {labels.shape}")
    if labels.size and labels.max() >= NUM_CLASSES:
        raise ValueError(f"{path}: label {labels.max()} out of range 0-9")
    return pixels, labels


def _to_images(pixels):
    """Planar (N, 3072) rows -> (N, 32, 32, 3), or (N, 3, 32, 32) if channels_first."""
    planar = pixels.reshape(-1, 3, 32, 32)
    if _image_data_format() == "channels_first":
        return np.ascontiguousarray(planar)
    return np.ascontiguousarray(planar.transpose(0, 2, 3, 1))


def _image_data_format():
    # Imported lazily: the backend module may not exist yet, and loading
    # data should not depend on it.
    try:
        from kiln.keras.backend import image_data_format
    except ImportError:
        return "channels_last"
    return image_data_format()


__all__ = ["load_data", "load_sample", "read_python_batch", "read_binary_batch",
           "RestrictedUnpickler"]
