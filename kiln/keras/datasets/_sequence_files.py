"""Where the IMDB and Reuters files come from, shared by `imdb.py` and `reuters.py`.

Each file is looked for, first match wins, in the Keras cache (`path` relative to
`$KERAS_HOME/datasets` or `~/.keras/datasets`, an absolute `path` as is), then under
`$KILN_DATASETS/<dataset>/`, and is otherwise downloaded from Keras's origin into the Keras
cache, kept only if its digest is the one Keras checks.
"""

import json
import warnings

from . import _files
from ._npz import load_npz

KERAS_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def local_or_downloaded(path, dataset, origin_name, digest, algorithm="sha256"):
    """Returns the path of the file `path` of `dataset`, downloading it if needed.

    Args:
        path: File name (or path) relative to the Keras datasets folder, as Keras's `path=`.
        dataset: Sub-folder of `$KILN_DATASETS` to look in, e.g. `"imdb"`.
        origin_name: The file's name at Keras's origin, e.g. `"imdb.npz"`.
        digest: Hex digest of Keras's original file, checked after a download.
        algorithm: `"sha256"` or `"md5"` (Keras knows only the md5 of the word indexes).

    Raises:
        OSError: not found locally and the download failed; the message says where to put
            the file.
    """
    cached = _files.keras_cache_dir() / path  # an absolute `path` wins the join
    if cached.is_file():
        return cached
    kiln_dir = _files.kiln_datasets_dir(dataset)
    if kiln_dir is not None and (kiln_dir / cached.name).is_file():
        return kiln_dir / cached.name
    url = KERAS_ORIGIN + origin_name
    try:
        return _files.download_verified(url, cached, digest, algorithm=algorithm)
    except OSError as err:
        raise OSError(
            f"{cached.name} is not available locally and could not be downloaded ({err}).\n"
            "Provide it in one of these ways:\n"
            f"  1. put Keras's file {origin_name} ({algorithm} {digest}, from {url}) at "
            f"{cached}\n"
            f"  2. set KILN_DATASETS to a folder containing {dataset}/{cached.name}") from err


def load_arrays(path, dataset, origin_name, digest, keys):
    """The arrays `keys` of the `.npz` found by `local_or_downloaded`, read without pickle."""
    npz_path = local_or_downloaded(path, dataset, origin_name, digest)
    arrays = load_npz(npz_path)
    missing = [key for key in keys if key not in arrays]
    if missing:
        raise ValueError(f"{npz_path}: missing arrays {missing}, expected keys {list(keys)}")
    return [arrays[key] for key in keys]


def load_word_index(path, dataset, origin_name, md5):
    """The `{word: index}` dict of a Keras word index JSON file."""
    json_path = local_or_downloaded(path, dataset, origin_name, md5, algorithm="md5")
    with open(json_path, encoding="utf-8") as f:
        return json.load(f)


def remove_long_seq(maxlen, seq, label):
    """Keeps the sequences shorter than `maxlen` (strictly, as Keras) and their labels."""
    new_seq, new_label = [], []
    for x, y in zip(seq, label, strict=False):  # Keras stops at the shorter
        if len(x) < maxlen:
            new_seq.append(x)
            new_label.append(y)
    return new_seq, new_label


def keras1_num_words(dataset, num_words, kwargs):
    """`num_words`, or Keras 1's `nb_words` popped from `kwargs` (with Keras 2's warning)."""
    if "nb_words" not in kwargs:
        return num_words
    warnings.warn(f"{dataset}.load_data: the `nb_words` argument is deprecated and was "
                  "renamed `num_words`", DeprecationWarning, stacklevel=3)
    return kwargs.pop("nb_words")
