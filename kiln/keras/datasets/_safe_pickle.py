"""Reading pickled CIFAR batches without running anything a pickle asks for.

The official batches were written by Python 2 with `b"data"` as a numpy array, so they name
numpy's array-rebuilding globals. None of those is ever imported: each known name maps to an
inert stand-in below that only records shape, dtype name and raw bytes; every other global is
refused.
"""

import pickle

import numpy as np


class _ArrayRecord:
    """What a pickled ndarray described; turned into uint8 by `to_uint8_array`."""

    def __init__(self, shape=None, dtype=None, raw=None, fortran=False):
        self.shape, self.dtype, self.raw, self.fortran = shape, dtype, raw, fortran

    def __setstate__(self, state):  # ndarray state: (version, shape, dtype, fortran, raw)
        if not (isinstance(state, tuple) and len(state) == 5):
            raise pickle.UnpicklingError("unexpected ndarray state in pickle")
        _, self.shape, self.dtype, self.fortran, self.raw = state


class _DtypeRecord:
    def __init__(self, name, align=False, copy=True):
        self.name = name.decode("latin1") if isinstance(name, bytes) else name

    def __setstate__(self, state):  # byte order etc.: irrelevant for uint8
        pass


_NDARRAY_CLASS = object()  # stands for `numpy.ndarray` as an argument


def _reconstruct(cls, shape, typecode):
    if cls is not _NDARRAY_CLASS:
        raise pickle.UnpicklingError("_reconstruct of something other than ndarray")
    return _ArrayRecord()


def _frombuffer(buffer, dtype, shape, order):  # pickle protocol 5 form
    return _ArrayRecord(shape, dtype, bytes(buffer), order == "F")


def _codecs_encode(text, encoding):  # how protocol-2 pickles spell bytes
    if encoding != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError("unexpected _codecs.encode call in pickle")
    return text.encode("latin1")


_INERT_STAND_INS = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.numeric", "_frombuffer"): _frombuffer,
    ("numpy._core.numeric", "_frombuffer"): _frombuffer,
    ("numpy", "ndarray"): _NDARRAY_CLASS,
    ("numpy", "dtype"): _DtypeRecord,
    ("_codecs", "encode"): _codecs_encode,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that never imports anything.

    Plain containers, bytes, str and numbers load as usual. A global is
    only accepted if it is one of the numpy array-rebuilding names, and even
    then it resolves to a local stand-in that records data, never to numpy
    itself; any other global (a class, `os.system`, ...) raises
    `pickle.UnpicklingError`.
    """

    def find_class(self, module, name):
        stand_in = _INERT_STAND_INS.get((module, name))
        if stand_in is None:
            raise pickle.UnpicklingError(f"refusing global {module}.{name} in a data file")
        return stand_in


def load_restricted(file, path):
    """Unpickles `file` with `RestrictedUnpickler`; errors name `path`."""
    try:
        # encoding="bytes": Python 2 strings (keys, raw pixels) stay bytes.
        return RestrictedUnpickler(file, encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
        raise ValueError(f"{path}: not a safe CIFAR pickle ({err})") from err


def to_uint8_array(value, what):
    """Converts unpickled `data`/`labels` (array record, bytes or int list) to uint8."""
    if isinstance(value, (bytes, bytearray)):
        return np.frombuffer(value, dtype=np.uint8).copy()
    if isinstance(value, (list, tuple)):
        if not all(type(v) is int and 0 <= v < 256 for v in value):
            raise ValueError(f"{what}: expected a list of integers 0-255")
        return np.array(value, dtype=np.uint8)
    if isinstance(value, _ArrayRecord):
        dtype = value.dtype.name if isinstance(value.dtype, _DtypeRecord) else None
        shape = value.shape
        if dtype not in ("u1", "|u1", "uint8") or not isinstance(value.raw, (bytes, bytearray)):
            raise ValueError(f"{what}: expected a uint8 array, got dtype {dtype!r}")
        if not (isinstance(shape, tuple) and all(type(d) is int and d >= 0 for d in shape)
                and int(np.prod(shape, dtype=np.int64)) == len(value.raw)):
            raise ValueError(f"{what}: array shape {shape!r} does not match its "
                             f"{len(value.raw)} bytes")
        order = "F" if value.fortran else "C"
        return np.frombuffer(value.raw, dtype=np.uint8).reshape(shape, order=order).copy()
    raise ValueError(f"{what}: unexpected type {type(value).__name__}")
