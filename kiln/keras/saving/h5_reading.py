"""Reading groups and arrays from an HDF5 file someone else may have written, safely.

A weights file is data a user may download. HDF5 can point outside itself (external links,
external or virtual datasets that read other files on this machine) and can declare a dataset
of terabytes that stores almost nothing (a "shape bomb" that exhausts memory on read). Keras 3
refuses all of these (`safe_get_h5_group` / `safe_get_h5_dataset` in its saving_lib.py); so
does kiln, with the same limits, and every refusal is a ValueError naming the file and the
entry.

Every name is walked one component at a time and each link is looked at before it is followed:
a Keras 2 weight name is a path ("dense/kernel:0"), and asking h5py whether "ext/kernel:0"
exists (`in`, `get`) already opens the file an external link "ext" points to. So links are
inspected with `links.exists` / `links.get_info`, which never resolve one, and a soft or
external link anywhere on the way is refused before anything behind it is opened.

Arrays must hold numbers (float, int or bool; bfloat16 as Keras marks it): a string, compound
or object dataset of the right shape is refused when read, which the loaders do for every
array before they assign any.
"""

import math

import h5py
import numpy as np

# Keras's limits: a dataset declaring more than 4 GiB must store at least 1/1000 of it.
_BOMB_FLOOR_BYTES = 1 << 32
_MAX_EXPANSION = 1000
_NUMERIC_KINDS = "biuf"  # what a weight (float32) can be assigned from without losing meaning
_LINK_NAMES = {h5py.h5l.TYPE_SOFT: "SoftLink", h5py.h5l.TYPE_EXTERNAL: "ExternalLink"}


def has_entry(group, name, filepath):
    """Whether `group` has a member `name` (one component), without following any link; a soft
    or external link is refused (ValueError), whether or not what it points to exists."""
    if not name or name == "." or "/" in name:  # "." is the group itself in HDF5
        raise ValueError(f"weights file {filepath}: invalid entry name '{name}' in "
                         f"'{group.name}'")
    encoded = name.encode("utf8")
    if not group.id.links.exists(encoded):
        return False
    kind = group.id.links.get_info(encoded).type
    if kind != h5py.h5l.TYPE_HARD:
        link = _LINK_NAMES.get(kind, "user-defined link")
        raise ValueError(f"weights file {filepath}: '{_join(group.name, name)}' is an HDF5 "
                         f"{link}, which is not allowed in a weights file (Keras refuses it "
                         "too: it can read other files on this machine)")
    return True


def get_group(h5_file, path, filepath):
    """The group at `path` ("a/b/vars"), or None if it is absent."""
    current = h5_file
    for part in path.split("/"):
        if not part:
            raise ValueError(f"weights file {filepath}: invalid group path '{path}'")
        if not has_entry(current, part, filepath):
            return None
        current = current[part]
        if not isinstance(current, h5py.Group):
            raise ValueError(f"weights file {filepath}: expected a group at '{path}', "
                             f"found a {type(current).__name__}")
    return current


def read_array(group, key, filepath, owner=None):
    """The dataset `key` of `group` (a name or a path below it, "dense/kernel:0") as a numpy
    array (bfloat16 ones as float32). `owner` ("Dense 'dense'") goes into the messages."""
    where = _join(group.name, key)
    about = f"'{where}'" + (f" ({owner})" if owner else "")
    folder, _, name = key.rpartition("/")
    parent = get_group(group, folder, filepath) if "/" in key else group
    if parent is None or not has_entry(parent, name, filepath):
        raise ValueError(f"weights file {filepath}: no array at {about}")
    dataset = parent[name]
    if not isinstance(dataset, h5py.Dataset):
        raise ValueError(f"weights file {filepath}: expected an array at {about}, found a "
                         f"{type(dataset).__name__}")
    if dataset.external:
        raise ValueError(f"weights file {filepath}: {about} is stored in another file "
                         f"({dataset.external}), which is not allowed in a weights file")
    if dataset.is_virtual:
        raise ValueError(f"weights file {filepath}: {about} is a virtual dataset, which is "
                         "not allowed in a weights file")
    bfloat16 = dataset.attrs.get("dtype") == "bfloat16" and dataset.dtype.itemsize == 2
    if dataset.dtype.kind not in _NUMERIC_KINDS and not bfloat16:
        raise ValueError(f"weights file {filepath}: {about} holds {_describe(dataset.dtype)} "
                         "values; expected numbers (float, int or bool) for a weight")
    declared = math.prod(dataset.shape) * dataset.dtype.itemsize
    stored = dataset.id.get_storage_size()
    if declared > _BOMB_FLOOR_BYTES and declared > _MAX_EXPANSION * stored:
        raise ValueError(f"weights file {filepath}: {about} declares {declared} bytes but "
                         f"stores {stored}; refusing to read a likely decompression bomb")
    try:
        value = dataset[()]
    except OSError as error:  # damaged data blocks: h5py's message does not name the file
        raise OSError(f"weights file {filepath}: cannot read {about} ({error})") from error
    if bfloat16:
        import ml_dtypes  # only files written in bfloat16 need it

        return np.asarray(value, dtype=ml_dtypes.bfloat16).astype(np.float32)
    return np.asarray(value)


def array_keys(group):
    """The dataset names of a `vars` group ("0", "1", ...), as Keras counts them."""
    return [] if group is None else list(group.keys())


def _join(group_name, key):
    return f"{group_name.rstrip('/')}/{key}"


def _describe(dtype):
    if dtype.kind in "SUO":
        return f"string or object ({dtype})"
    if dtype.names:
        return f"compound ({', '.join(dtype.names)})"
    return {"c": "complex", "V": "opaque", "M": "date", "m": "time-delta"}.get(
        dtype.kind, str(dtype)) + f" ({dtype})"
