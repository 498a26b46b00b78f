"""Reading a Keras sequence `.npz` (IMDB, Reuters) without `allow_pickle=True`.

Plain arrays (the labels) load with `allow_pickle=False`. Object arrays (the ragged
sequences) are the only members numpy writes as a pickle; their payload goes to
`decode_object_array`, which interprets the pickle itself and runs nothing from the file.
"""

import io
import zipfile

import numpy as np

from ._object_pickle import RefusedPickle, decode_object_array


def load_npz(path):
    """Returns `{name: array}` for every `.npy` member of the archive at `path`.

    Raises:
        ValueError: the file is not an `.npz`, a member is malformed, or an object member's
            pickle holds anything but an object array of int lists (the message names the
            file, the member and what was refused).
    """
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if member.endswith(".npy"):
                    arrays[member[:-len(".npy")]] = _read_member(archive.read(member),
                                                                 path, member)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise ValueError(f"{path}: not a readable .npz file ({err})") from err
    return arrays


def _read_member(raw, path, member):
    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version in ((2, 0), (3, 0)):
            # 3.0 differs from 2.0 only in the header text's encoding (utf-8, not latin1);
            # the length field is the same, and a dtype description is ASCII either way.
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
    except ValueError as err:
        raise ValueError(f"{path}: member {member} has a bad .npy header ({err})") from err
    if not dtype.hasobject:
        stream.seek(0)
        try:
            return np.lib.format.read_array(stream, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"{path}: member {member} is malformed ({err})") from err
    if dtype != np.dtype(object):
        raise ValueError(f"{path}: member {member} has dtype {dtype}, a structured dtype with "
                         "objects; only plain object arrays of int lists are read")
    try:
        array = decode_object_array(raw[stream.tell():])
    except (RefusedPickle, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: refused member {member}: {err}; the file is damaged or "
                         "not a Keras dataset (nothing in it was executed)") from err
    if array.shape != tuple(shape):
        raise ValueError(f"{path}: member {member}: the header says shape {tuple(shape)}, "
                         f"the data has {array.shape}")
    return array
