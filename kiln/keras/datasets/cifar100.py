"""CIFAR-100 small colour images (100 fine classes in 20 coarse ones), loaded like
`keras.datasets.cifar100`.

Sources, first match wins: the Keras cache, `cifar-100-python/{train,test}` (as Keras >= 3.5
extracts it, under `cifar-100-python-target/`, or directly under the datasets folder as older
Keras did), then a sha256-verified download of the python tarball. The two files are pickles;
they are read with CIFAR-10's restricted unpickler (`_safe_pickle.RestrictedUnpickler`), which
resolves no importable global, so a tampered file cannot run code.
"""


from . import _files
from ._safe_pickle import load_restricted, to_uint8_array
from .cifar10 import PIXELS_PER_IMAGE, _to_images

ORIGIN_URL = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
ORIGIN_SHA256 = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"
ARCHIVE_NAME = "cifar-100-python.tar.gz"
PYTHON_DIR = "cifar-100-python"
TARGET_DIR = "cifar-100-python-target"  # Keras >= 3.5 extracts the archive in here
NUM_CLASSES = {"fine": 100, "coarse": 20}


def load_data(label_mode="fine"):
    """Loads the CIFAR-100 dataset.

    Args:
        label_mode: `"fine"` (100 classes) or `"coarse"` (their 20 superclasses).

    Returns:
        Tuple of NumPy arrays: `(x_train, y_train), (x_test, y_test)`. `x_*` are uint8 images
        shaped `(num_samples, 32, 32, 3)`, or `(num_samples, 3, 32, 32)` when the backend's
        image data format is `"channels_first"`; `y_*` are uint8 labels shaped
        `(num_samples, 1)`. The full dataset has 50,000 training and 10,000 test images.

    Raises:
        ValueError: `label_mode` is neither, or a file is malformed (the message names it).
        OSError: no local copy exists and the download failed; the message says where to put
            the files.
    """
    if label_mode not in NUM_CLASSES:
        raise ValueError('cifar100.load_data: argument label_mode must be one of "fine", '
                         f'"coarse", got {label_mode!r}')
    cache = _files.keras_cache_dir()
    folder = _find_local_folder(cache)
    if folder is None:
        try:
            _download_and_extract(cache)
        except OSError as err:
            raise OSError(_missing_data_message(cache, err)) from err
        folder = _find_local_folder(cache)
        if folder is None:
            raise OSError(f"{cache / ARCHIVE_NAME} did not contain {PYTHON_DIR}/train and test")
    splits = [read_python_file(folder / name, label_mode) for name in ("train", "test")]
    return tuple((_to_images(pixels), labels.reshape(-1, 1)) for pixels, labels in splits)


def read_python_file(path, label_mode="fine"):
    """Reads `train` or `test` of the python version: a pickled dict with `b"data"`
    (N, 3072) uint8 planar RGB rows and `b"fine_labels"` / `b"coarse_labels"` (N integers).

    Returns:
        `(pixels, labels)`: uint8 arrays shaped (N, 3072) and (N,).
    """
    with open(path, "rb") as f:
        batch = load_restricted(f, path)
    if not isinstance(batch, dict):
        raise ValueError(f"{path}: expected a pickled dict, got {type(batch).__name__}")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    label_key = f"{label_mode}_labels"
    for key in ("data", label_key):
        if key not in batch:
            raise ValueError(f"{path}: missing key {key!r}, found {sorted(map(str, batch))}")
    pixels = to_uint8_array(batch["data"], f"{path} data")
    labels = to_uint8_array(batch[label_key], f"{path} {label_key}")
    if pixels.ndim == 1 and pixels.size % PIXELS_PER_IMAGE == 0:
        pixels = pixels.reshape(-1, PIXELS_PER_IMAGE)
    if pixels.ndim != 2 or pixels.shape[1] != PIXELS_PER_IMAGE:
        raise ValueError(f"{path}: data must be (N, {PIXELS_PER_IMAGE}), got {pixels.shape}")
    if labels.shape != (pixels.shape[0],):
        raise ValueError(f"{path}: expected {pixels.shape[0]} {label_key}, got {labels.shape}")
    classes = NUM_CLASSES[label_mode]
    if labels.size and labels.max() >= classes:
        raise ValueError(f"{path}: {label_key} holds {labels.max()}, expected 0-{classes - 1}")
    return pixels, labels


def _find_local_folder(cache):
    for folder in (cache / TARGET_DIR / PYTHON_DIR, cache / PYTHON_DIR):
        present = [name for name in ("train", "test") if (folder / name).is_file()]
        if len(present) == 2:
            return folder
        if present:
            raise FileNotFoundError(f"{folder} holds only part of CIFAR-100; missing "
                                    f"{'test' if present == ['train'] else 'train'}")
    return None


def _download_and_extract(cache):
    archive = cache / ARCHIVE_NAME
    if not (archive.is_file() and _files.sha256_of(archive) == ORIGIN_SHA256):
        _files.download_verified(ORIGIN_URL, archive, ORIGIN_SHA256)
    _files.extract_tar_safely(archive, cache / TARGET_DIR)


def _missing_data_message(cache, cause):
    return (
        f"CIFAR-100 is not available locally and could not be downloaded ({cause}).\n"
        f"Put {ARCHIVE_NAME} (sha256 {ORIGIN_SHA256}, from {ORIGIN_URL}) at "
        f"{cache / ARCHIVE_NAME}, or extract it so that {cache / PYTHON_DIR}/ (or "
        f"{cache / TARGET_DIR / PYTHON_DIR}/) holds train and test")


__all__ = ["load_data", "read_python_file"]
