"""Reading groups and arrays from an HDF5 file someone else may have written, safely.

A weights file is data a user may download. HDF5 can point outside itself (external links,
external or virtual datasets that read other files on this machine) and can declare a dataset
of terabytes that stores almost nothing (a "shape bomb" that exhausts memory on read). Keras 3
refuses all of these (`safe_get_h5_group` / `safe_get_h5_dataset` in its saving_lib.py); so
does kiln, with the same limits, and every refusal is a ValueError naming the file and the
entry.
"""

import math

import h5py
import numpy as np

# Keras's limits: a dataset declaring more than 4 GiB must store at least 1/1000 of it.
_BOMB_FLOOR_BYTES = 1 << 32
_MAX_EXPANSION = 1000


def get_group(h5_file, path, filepath):
    """The group at `path` ("a/b/vars"), or None if it is absent."""
    current = h5_file
    for part in path.split("/"):
        if not part:
            raise ValueError(f"weights file {filepath}: invalid group path '{path}'")
        if part not in current:
            return None
        link = current.get(part, getclass=True, getlink=True)
        if link in (h5py.ExternalLink, h5py.SoftLink):
            raise ValueError(f"weights file {filepath}: '{path}' is an HDF5 "
                             f"{link.__name__}, which is not allowed in a weights file")
        current = current[part]
        if not isinstance(current, h5py.Group):
            raise ValueError(f"weights file {filepath}: expected a group at '{path}', "
                             f"found a {type(current).__name__}")
    return current


def read_array(group, key, filepath):
    """The dataset `key` of `group` as a numpy array (bfloat16 ones as float32)."""
    where = f"{group.name}/{key}"
    link = group.get(key, getclass=True, getlink=True)
    if link in (h5py.ExternalLink, h5py.SoftLink):
        raise ValueError(f"weights file {filepath}: '{where}' is an HDF5 {link.__name__}, "
                         "which is not allowed in a weights file")
    dataset = group[key]
    if not isinstance(dataset, h5py.Dataset):
        raise ValueError(f"weights file {filepath}: expected an array at '{where}', found a "
                         f"{type(dataset).__name__}")
    if dataset.external:
        raise ValueError(f"weights file {filepath}: '{where}' is stored in another file "
                         f"({dataset.external}), which is not allowed in a weights file")
    if dataset.is_virtual:
        raise ValueError(f"weights file {filepath}: '{where}' is a virtual dataset, which is "
                         "not allowed in a weights file")
    declared = math.prod(dataset.shape) * dataset.dtype.itemsize
    stored = dataset.id.get_storage_size()
    if declared > _BOMB_FLOOR_BYTES and declared > _MAX_EXPANSION * stored:
        raise ValueError(f"weights file {filepath}: '{where}' declares {declared} bytes but "
                         f"stores {stored}; refusing to read a likely decompression bomb")
    try:
        value = dataset[()]
    except OSError as error:  # damaged data blocks: h5py's message does not name the file
        raise OSError(f"weights file {filepath}: cannot read '{where}' ({error})") from error
    if dataset.attrs.get("dtype") == "bfloat16":
        import ml_dtypes  # only files written in bfloat16 need it

        return np.asarray(value, dtype=ml_dtypes.bfloat16).astype(np.float32)
    return np.asarray(value)


def array_keys(group):
    """The dataset names of a `vars` group ("0", "1", ...), as Keras counts them."""
    return [] if group is None else list(group.keys())
