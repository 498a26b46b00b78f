"""Checks that turn a bad batch into an error naming the argument, the batch and the expected
value before the step runs on it (a NaN would otherwise train silently into NaN weights).

The finite check is a numba kernel on the floats' bits (an inf or a NaN has every exponent bit
set): an integer maximum per block, which vectorizes, then a scan for the first only in a
block that holds one; one pass, no temporaries, parallel for whole arrays checked once up
front (fit() pays it per call, over every sample) and serial for a batch.
"""

import numpy as np

from ....ops.numba_config import njit, prange

_EXACT = dict(cache=True, nogil=True)  # no fastmath: isfinite must stay a real test


#: the exponent bits of float32 / float64: all set in an inf or a NaN, never in a finite value
_EXPONENT = {np.dtype(np.float32): (np.uint32, np.uint32(0x7F800000)),
             np.dtype(np.float64): (np.uint64, np.uint64(0x7FF0000000000000))}


@njit(**_EXACT)
def _top_exponent(bits, exponent):
    """The largest `bits & exponent` of a non-empty array of a float's bits: `exponent`
    itself when one is an inf or a NaN. An integer max vectorizes; a loop that tests
    isfinite and breaks at the first hit does not (4x slower, fit() pays it per call)."""
    top = bits[0] & exponent
    for i in range(1, bits.size):
        value = bits[i] & exponent
        top = value if value > top else top
    return top


@njit(**_EXACT)
def _first_in(bits, exponent, start, stop):
    for i in range(start, stop):
        if bits[i] & exponent == exponent:
            return i
    return -1


@njit(parallel=True, **_EXACT)
def _first_non_finite_parallel(bits, exponent):
    """Index of the first NaN or inf in `bits` (a float array's bits), or -1: blocks in
    parallel, each scanned for its first only when its maximum says it holds one; the lowest
    block wins."""
    block = 1 << 16
    blocks = (bits.size + block - 1) // block
    found = np.full(blocks, -1, dtype=np.int64)
    for b in prange(blocks):
        start = b * block
        stop = min(bits.size, start + block)
        if _top_exponent(bits[start:stop], exponent) == exponent:
            found[b] = _first_in(bits, exponent, start, stop)
    for b in range(blocks):
        if found[b] >= 0:
            return found[b]
    return -1


@njit(**_EXACT)
def _first_non_finite_serial(bits, exponent):
    if _top_exponent(bits, exponent) != exponent:
        return -1
    return _first_in(bits, exponent, 0, bits.size)


def first_non_finite(array, parallel=False):
    """Index (into array.reshape(-1)) of the first NaN or inf, or -1; integers are finite."""
    if not np.issubdtype(array.dtype, np.floating) or array.size == 0:
        return -1
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype not in _EXPONENT:
        flat = flat.astype(np.float32)
    unsigned, exponent = _EXPONENT[flat.dtype]
    kernel = _first_non_finite_parallel if parallel else _first_non_finite_serial
    return int(kernel(flat.view(unsigned), exponent))


def numeric_array(value, argument, where):
    """`value` as a numpy array of a real number or bool dtype, or a ValueError."""
    try:
        array = np.asarray(value)
    except Exception as error:  # ragged lists and the like
        raise ValueError(f"{where}: argument {argument} must be a numeric array, got "
                         f"{type(value).__name__}") from error
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
            or array.dtype == np.bool_):
        raise ValueError(f"{where}: argument {argument} must be a numeric array (float or int),"
                         f" got dtype {array.dtype}")
    return array


def check_shape(array, argument, expected, where, hint=""):
    """array.shape must be (batch, *expected); None in expected matches any size."""
    shape = array.shape[1:]
    if array.ndim == 0 or len(shape) != len(expected) or any(
            want is not None and got != want for got, want in zip(shape, expected, strict=True)):
        wanted = ", ".join("any" if e is None else str(e) for e in ("batch", *expected))
        raise ValueError(f"{where}: argument {argument} must have shape ({wanted}){hint}, got "
                         f"{array.shape}")


def check_finite(array, argument, where, parallel=False):
    index = first_non_finite(array, parallel)
    if index >= 0:
        position = np.unravel_index(index, array.shape)
        value = np.asarray(array).reshape(-1)[index]
        raise ValueError(f"{where}: argument {argument} holds {value} at index "
                         f"{tuple(int(p) for p in position)} (sample {int(position[0])}); "
                         "expected finite numbers (no NaN or inf)")


def check_same_length(arrays_by_argument, where):
    lengths = {argument: len(array) for argument, array in arrays_by_argument}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{where}: arguments must have the same number of samples, got "
                         + ", ".join(f"{a}: {n}" for a, n in lengths.items()))


def input_array(array, dtype):
    """`array` as a C-contiguous array of the plan's input `dtype`: floats given for an
    integer input are truncated toward zero, as Keras's cast to the input's dtype."""
    return np.ascontiguousarray(array, dtype=dtype)


def check_indices(array, limit, argument, where, reader):
    """Every value of `array` must be an index into `limit` rows (the Embedding `reader`'s
    input_dim) once truncated toward zero: a ValueError naming the first one that is not.
    Vectorized: its min and max first, the position only when one is out of range."""
    if array.size == 0:
        return
    low, high = array.min(), array.max()
    if low > -1 and high < limit:  # a float in (-1, 0) truncates to 0
        return
    flat = np.asarray(array).reshape(-1)
    index = int(np.flatnonzero((flat <= -1) | (flat >= limit))[0])
    position = np.unravel_index(index, array.shape)
    raise ValueError(f"{where}: argument {argument} holds {flat[index]} at index "
                     f"{tuple(int(p) for p in position)} (sample {int(position[0])}), read as a "
                     f"token id by {reader}; expected ids in [0, {limit}) (input_dim={limit})")
