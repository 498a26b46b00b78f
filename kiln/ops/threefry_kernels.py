"""JAX's random draws (threefry2x32, its default generator) as one numba kernel, so a seeded
initializer or keras.random function draws the values Keras 3 draws on its JAX backend (the
planned random draws of random_draw.py inline the same per-element function).

Keras turns an int seed into the key (seed, 0). With `jax_threefry_partitionable` (JAX's
default since 0.5), the bits of element i of a draw are threefry2x32(key, (hi(i), lo(i))),
the two output words xor-ed, i being the element's index in C order as a 64-bit counter. That
is a pure function of (key, i), so the kernel fills the elements in parallel. Its integer
arithmetic is in uint64 masked to 32 bits (numba would widen uint32 sums to int64).

From the bits, as jax.random in float32: 23 mantissa bits make u0 in [0, 1) exactly; the draw
is max(low, u0 * (high - low) + low), one rounding (XLA fuses it into a multiply-add, done
here in float64 where the product is exact). A normal draw is then sqrt(2) erfinv(u) with
Giles' single-precision polynomial, as XLA evaluates it (each step a fused multiply-add). The
uniform draw is bit for bit JAX's; the normal ones may differ in the last bit where this log1p
and XLA's round differently (about 1 value in 80).
"""

import math

import numpy as np

from .numba_config import njit, prange

UNIFORM, NORMAL = 0, 1
_MASK = 0xFFFFFFFF
_ROTATIONS = np.array([[13, 15, 26, 6], [17, 29, 16, 24]], dtype=np.uint64)
# Giles' erfinv in float32: for w = -log(1 - x^2) < 5 (central) and >= 5 (tail)
_ERFINV = np.array([[2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                     0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941],
                    [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                     0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]],
                   dtype=np.float32)


@njit(cache=True, nogil=True, inline="always")
def _threefry_pair(keys, counter):
    """threefry2x32 of the 64-bit `counter` (hi, lo) under `keys`: its two output words."""
    mask, width = np.uint64(_MASK), np.uint64(32)
    x0 = ((counter >> width) + keys[0]) & mask
    x1 = ((counter & mask) + keys[1]) & mask
    for block in range(5):
        for r in range(4):
            rotation = _ROTATIONS[block % 2, r]
            x0 = (x0 + x1) & mask
            x1 = ((x1 << rotation) | (x1 >> (width - rotation))) & mask
            x1 ^= x0
        x0 = (x0 + keys[(block + 1) % 3]) & mask
        x1 = (x1 + keys[(block + 2) % 3] + np.uint64(block + 1)) & mask
    return x0, x1


@njit(cache=True, nogil=True, inline="always")
def _threefry_xor(keys, counter):
    x0, x1 = _threefry_pair(keys, counter)
    return x0 ^ x1


@njit(cache=True, nogil=True, inline="always")
def _erfinv(x):
    if abs(x) == np.float32(1.0):
        return x * np.float32(np.inf)
    w = -np.float32(math.log1p(np.float64(-(x * x))))
    row = 0 if w < np.float32(5.0) else 1
    w = w - np.float32(2.5) if row == 0 else np.float32(math.sqrt(w)) - np.float32(3.0)
    p = _ERFINV[row, 0]
    for i in range(1, 9):
        p = np.float32(np.float64(p) * np.float64(w) + np.float64(_ERFINV[row, i]))
    return p * x


@njit(cache=True, nogil=True, inline="always")
def key_words(key0, key1):
    """Threefry's three key words for the key (key0, key1)."""
    keys = np.empty(3, np.uint64)
    keys[0], keys[1] = np.uint64(key0) & np.uint64(_MASK), np.uint64(key1) & np.uint64(_MASK)
    keys[2] = keys[0] ^ keys[1] ^ np.uint64(0x1BD11BDA)
    return keys


@njit(cache=True, nogil=True, inline="always")
def draw_one(keys, i, kind, low, span):
    """Element i of JAX's uniform draw on [low, low + span) for `keys`, or (kind NORMAL)
    sqrt(2) erfinv of it."""
    mantissa = _threefry_xor(keys, np.uint64(i)) >> np.uint64(9)
    unit = np.float64(mantissa) * 2.0**-23
    u = max(low, np.float32(unit * span + np.float64(low)))
    return u if kind == UNIFORM else np.float32(math.sqrt(2.0)) * _erfinv(u)


@njit(parallel=True, cache=True, nogil=True)
def draw_keyed(key0, key1, kind, low, high, out):
    """Fill the flat float32 `out` with JAX's uniform draw on [low, high) for the key
    (key0, key1), or (kind NORMAL) with sqrt(2) erfinv of it."""
    keys = key_words(key0, key1)
    span = np.float64(np.float32(high - low))
    for i in prange(out.size):
        out[i] = draw_one(keys, i, kind, low, span)


def draws(seed, shape, kind, low, high, counter=0):
    """An array of `shape` drawn by `draw_keyed` for the key (seed, counter), low and high as
    float32. Keras turns an int seed into the key (seed, 0); a SeedGenerator's draws use
    (seed, 0), (seed, 1), ..."""
    out = np.empty(int(np.prod(shape, dtype=np.int64)), np.float32)
    draw_keyed(int(seed) & _MASK, int(counter) & _MASK, kind, np.float32(low), np.float32(high),
               out)
    return out.reshape(shape)


@njit(parallel=True, cache=True, nogil=True)
def random_bits(key0, key1, out):
    """jax.random's 32 random bits per element (`_random_bits(key, 32, shape)`) into the
    flat uint32 `out`."""
    keys = key_words(key0, key1)
    for i in prange(out.size):
        out[i] = np.uint32(_threefry_xor(keys, np.uint64(i)))


@njit(cache=True, nogil=True)
def split_key(key0, key1, out):
    """jax.random.split(key) into the (2, 2) uint64 `out`: key i is threefry2x32 of the
    counter (0, i), as with `jax_threefry_partitionable`."""
    keys = key_words(key0, key1)
    for i in range(2):
        out[i, 0], out[i, 1] = _threefry_pair(keys, np.uint64(i))
