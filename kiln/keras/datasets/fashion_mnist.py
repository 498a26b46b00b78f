"""Fashion-MNIST (Zalando's 28x28 clothing images, 10 classes), loaded like
`keras.datasets.fashion_mnist`.

Keras caches the four gzipped IDX files in `$KERAS_HOME/datasets/fashion-mnist/` (or
`~/.keras/datasets/fashion-mnist/`); they are read from there, else downloaded there, each
kept only if its md5 matches the one Zalando publishes (Keras itself checks none).
"""


from . import _files

ORIGIN_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
CACHE_SUBDIR = "fashion-mnist"
IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10

# key -> (file name, md5 from the Fashion-MNIST README)
FILES = {
    "y_train": ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
    "x_train": ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
    "y_test": ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    "x_test": ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
}


def load_data():
    """Loads the Fashion-MNIST dataset.

    Returns:
        Tuple of NumPy arrays: `(x_train, y_train), (x_test, y_test)`. `x_*` are uint8
        grayscale images shaped `(num_samples, 28, 28)`; `y_*` are uint8 labels 0-9 shaped
        `(num_samples,)`. The full dataset has 60,000 training and 10,000 test images.

    Raises:
        OSError: a file is missing and could not be downloaded; the message says where to
            put it.
        ValueError: a file is not a gzipped unsigned-byte IDX file of the expected kind (the
            message names it).
    """
    folder = _files.keras_cache_dir() / CACHE_SUBDIR
    arrays = {}
    for key, (name, md5) in FILES.items():
        path = folder / name
        if not path.is_file():
            try:
                _files.download_verified(ORIGIN_BASE + name, path, md5, algorithm="md5")
            except OSError as err:
                raise OSError(_missing_data_message(folder, err)) from err
        magic = _files.IDX_IMAGES_MAGIC if key.startswith("x") else _files.IDX_LABELS_MAGIC
        arrays[key] = _files.read_idx(path, magic)
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], arrays[f"y_{split}"]
        if x.shape[1:] != IMAGE_SHAPE or y.shape != (x.shape[0],):
            raise ValueError(f"{folder}: x_{split} must be (N, 28, 28) and y_{split} (N,), "
                             f"got {x.shape} and {y.shape}")
        if y.size and y.max() >= NUM_CLASSES:
            raise ValueError(f"{folder}: y_{split} holds label {y.max()}, expected 0-9")
    return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"])


def _missing_data_message(folder, cause):
    names = ", ".join(name for name, _ in FILES.values())
    return (f"Fashion-MNIST is not available locally and could not be downloaded ({cause}).\n"
            f"Put Keras's four files {names} (from {ORIGIN_BASE}, gzipped IDX as distributed) "
            f"in {folder}/")


__all__ = ["load_data"]
