"""MNIST handwritten digits, loaded like `keras.datasets.mnist`.

Sources, first match wins:
1. the Keras cache: `$KERAS_HOME/datasets/mnist.npz` (or `~/.keras/...`);
2. the original IDX files under `$KILN_DATASETS/mnist/` (plain or `.gz`);
3. a sha256-verified download of the canonical Keras `mnist.npz`.
"""

import numpy as np

from . import _files

ORIGIN_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
ORIGIN_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"

IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10
_NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")

# Yann LeCun's file names, and the dotted spelling some mirrors use.
IDX_FILE_NAMES = {
    "x_train": ("train-images-idx3-ubyte", "train-images.idx3-ubyte"),
    "y_train": ("train-labels-idx1-ubyte", "train-labels.idx1-ubyte"),
    "x_test": ("t10k-images-idx3-ubyte", "t10k-images.idx3-ubyte"),
    "y_test": ("t10k-labels-idx1-ubyte", "t10k-labels.idx1-ubyte"),
}


def load_data(path="mnist.npz"):
    """Loads the MNIST dataset.

    Args:
        path: Where the `.npz` is cached, relative to the Keras datasets
            folder (`$KERAS_HOME/datasets` or `~/.keras/datasets`); an
            absolute path is used as is, as in Keras.

    Returns:
        Tuple of NumPy arrays: `(x_train, y_train), (x_test, y_test)`.
        `x_*` are uint8 images shaped `(num_samples, 28, 28)` with values
        0-255; `y_*` are uint8 digit labels 0-9 shaped `(num_samples,)`.
        The full dataset has 60,000 training and 10,000 test samples.

    Raises:
        OSError: no local copy exists and the download failed; the message
            says where to put the files.
        ValueError: a local file is malformed (the message names it).
    """
    npz_path = _files.keras_cache_dir() / path  # an absolute `path` wins the join
    if npz_path.is_file():
        return _load_npz(npz_path)

    idx_dir = _files.kiln_datasets_dir("mnist")
    if idx_dir is not None:
        idx_paths = {key: _files.find_existing(idx_dir, names)
                     for key, names in IDX_FILE_NAMES.items()}
        found = {key: p for key, p in idx_paths.items() if p is not None}
        if len(found) == len(IDX_FILE_NAMES):
            return _load_idx(found)
        if found:
            # A half-populated folder is a mistake worth reporting rather
            # than silently replacing with a download.
            missing = [IDX_FILE_NAMES[key][0] for key in IDX_FILE_NAMES if key not in found]
            raise FileNotFoundError(
                f"{idx_dir} holds only part of MNIST; missing {', '.join(missing)} "
                "(plain or .gz)")

    try:
        _files.download_verified(ORIGIN_URL, npz_path, ORIGIN_SHA256)
    except OSError as err:
        raise OSError(_missing_data_message(npz_path, err)) from err
    return _load_npz(npz_path)


def _missing_data_message(npz_path, cause):
    return (
        f"MNIST is not available locally and could not be downloaded ({cause}).\n"
        "Provide it in one of these ways:\n"
        f"  1. put the Keras file mnist.npz (sha256 {ORIGIN_SHA256}, from {ORIGIN_URL}) "
        f"at {npz_path}\n"
        "  2. set KILN_DATASETS to a folder containing mnist/ with the four IDX files "
        "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
        "t10k-labels-idx1-ubyte (plain or .gz)")


def _load_npz(npz_path):
    """Reads the Keras `mnist.npz`; pickled object arrays are refused."""
    try:
        with np.load(npz_path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in _NPZ_KEYS if key in archive.files}
    except (OSError, EOFError, ValueError) as err:
        # np.load reports a non-zip file as OSError/EOFError and a pickled
        # object array as ValueError, without the file name; add it.
        raise ValueError(f"{npz_path}: not a readable .npz of plain arrays ({err})") from err
    missing = [key for key in _NPZ_KEYS if key not in arrays]
    if missing:
        raise ValueError(f"{npz_path}: missing arrays {missing}, expected keys {list(_NPZ_KEYS)}")
    return _validated(arrays, npz_path)


def _load_idx(idx_paths):
    arrays = {}
    for key, idx_path in idx_paths.items():
        magic = _files.IDX_IMAGES_MAGIC if key.startswith("x") else _files.IDX_LABELS_MAGIC
        arrays[key] = _files.read_idx(idx_path, magic)
    return _validated(arrays, idx_paths["x_train"].parent)


def _validated(arrays, source):
    """Checks dtypes, shapes and label range, then returns the Keras tuple."""
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.dtype != np.uint8 or y.dtype != np.uint8:
            raise ValueError(f"{source}: {split} arrays must be uint8, "
                             f"got x {x.dtype}, y {y.dtype}")
        if x.ndim != 3 or x.shape[1:] != IMAGE_SHAPE:
            raise ValueError(f"{source}: x_{split} must be (N, 28, 28), got {x.shape}")
        if y.shape != (x.shape[0],):
            raise ValueError(f"{source}: y_{split} must be ({x.shape[0]},) to match "
                             f"x_{split}, got {y.shape}")
        if y.size and y.max() >= NUM_CLASSES:
            raise ValueError(f"{source}: y_{split} has label {y.max()}, expected 0-9")
    return ((arrays["x_train"], arrays["y_train"]),
            (arrays["x_test"], arrays["y_test"]))
