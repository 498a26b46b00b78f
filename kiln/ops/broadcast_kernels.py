"""numba kernels of the broadcasting ops (broadcast.py) where oneDNN 3.2 is slow or lacks one.

Both kernels walk the *physical* axes of a buffer, so they run on the activations' layouts as
they are (nhwc, nchw, oneDNN's blocked nChw8c / nChw16c) without a reorder:

- `elementwise_kernel`: out = f(x, y, z) element by element, each operand read through its
  own strides (stride 0 on a broadcast axis). oneDNN's binary primitive has only its
  reference kernel, far slower, for many broadcast patterns (e.g. (1, C, H, 1) onto
  (N, C, H, W)), none for both operands broadcasting, and none for the local derivatives of
  divide / maximum / minimum.
- `reduce_kernel`: the sum of a gradient (optionally times a second array, the local
  derivative of multiply) over the broadcast axes. Per-thread partial sums, then one pass
  adding them up. Chosen over oneDNN 3.2's reduction primitive, which picks its reference
  kernel ("ref:any") for a per-channel sum (a bias gradient) in nhwc, nchw and nChw8c alike:
  this kernel is far faster in all three. oneDNN has a jit reduction only over the innermost
  dims of plain layouts (nchw -> (N, C, 1, 1)), not for a bias gradient in the layouts kiln's
  convolutions use.

Both decisions' measurements: docs/performance.md, 'Decisions and their measurements'.

`plan_axes` turns (layout, operand dims) into the kernels' arguments: the physical axes of the
iteration space in memory order, adjacent axes merged where every operand allows, padded to
AXES at the outside. Both kernels take float32 buffers (a bf16 operand is widened by a reorder
to a plain float32 layout first).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from .numba_config import PARALLEL, SERIAL, THREADS, get_num_threads, njit, prange

AXES = 6  # enough for any alternation of kept / reduced axes of a 5D blocked layout
U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32

# elementwise_kernel's functions: out = ...
ADD, SUBTRACT, MULTIPLY, DIVIDE, MAXIMUM, MINIMUM = 0, 1, 2, 3, 4, 5   # x (op) y
DIVIDE_GRAD_DIVISOR = 6      # -z * x / y**2         (z: the output gradient)
EXTREME_SHARE_FIRST = 7      # z * (x > y) + z / 2 * (x == y): maximum's first input
EXTREME_SHARE_SECOND = 8     # z * (y > x) + z / 2 * (x == y)
POWER = 9                    # x ** y
POWER_GRAD_BASE = 10         # z * y * x ** (y - 1), 0 where y == 0 (as JAX)
POWER_GRAD_EXPONENT = 11     # z * log(x) * x ** y, with log(0) taken as 0 (as JAX)
# comparisons: 1.0 where true, else 0.0 (Keras's bool tensor as kiln's float32 one)
EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL = 12, 13, 14, 15, 16, 17
# where (select.py): x is the condition, true where non-zero (nan too, as numpy's bool())
SELECT = 18                  # y if x else z
SELECT_FIRST = 19            # y if x else 0          (the gradient of where's x1: y = dy)
SELECT_SECOND = 20           # 0 if x else y          (the gradient of where's x2)
CODES = {"add": ADD, "subtract": SUBTRACT, "multiply": MULTIPLY, "divide": DIVIDE,
         "maximum": MAXIMUM, "minimum": MINIMUM, "power": POWER, "equal": EQUAL,
         "not_equal": NOT_EQUAL, "greater": GREATER, "greater_equal": GREATER_EQUAL,
         "less": LESS, "less_equal": LESS_EQUAL}


def physical_axes(desc):
    """[(logical axis, extent, stride in elements, multiplier), ...] of a dense layout: plain
    (any order of the dims) or blocked with one inner block (nChw8c: axis 1 appears twice, as
    C / 8 blocks of multiplier 8 and as 8 lanes of multiplier 1). The multiplier maps a
    physical index onto the logical index: logical = sum(index * multiplier). None when the
    layout has padding or is of another kind (the caller reorders to a plain layout)."""
    key = layout_key(desc)
    if len(key) != 6 or key[1] != dnnl.f32 or desc.size != 4 * int(np.prod(desc.dims)):
        return None
    dims, _, _, strides, blocks, block_axes = key
    if len(blocks) > 1:
        return None
    axes = []
    for axis, (extent, stride) in enumerate(zip(dims, strides, strict=True)):
        block = blocks[0] if blocks and block_axes[0] == axis else 1
        axes.append((axis, extent // block, stride, block))
    if blocks:
        axes.append((block_axes[0], blocks[0], 1, 1))
    return axes


def operand_strides(axes, dims, desc):
    """The strides (elements) of an operand of logical `dims` in `desc` along the physical
    `axes` of an iteration space (physical_axes of another desc): 0 where the operand has
    size 1 (broadcast). None when its layout cannot be walked that way (padded, or blocked
    differently from the iteration space): the caller reorders it to a plain layout."""
    key = layout_key(desc)
    if len(key) != 6 or key[1] != dnnl.f32 or desc.size != 4 * int(np.prod(desc.dims)) \
            or len(key[4]) > 1:
        return None
    strides, blocks, block_axes = key[3], key[4], key[5]
    result = []
    for axis, extent, _, multiplier in axes:
        if dims[axis] == 1:
            result.append(0)
        elif not blocks or axis != block_axes[0]:
            result.append(strides[axis] * multiplier)
        elif multiplier == blocks[0]:   # the blocks of the blocked axis
            result.append(strides[axis])
        elif multiplier == 1 and extent == blocks[0]:  # the lanes inside a block
            result.append(1)
        else:
            return None
    return result


def split_rows(shape, strides):
    """Give every thread some rows: when the outer axes (all but the last two) hold fewer
    than 4 rows a thread, cut the middle axis in two (a per-channel sum of nhwc merges N, H,
    W into that one axis), or the inner one when the middle one is 1 (equal shapes merge
    into one long axis)."""
    rows = int(np.prod(shape[:-2]))
    mid, inner = int(shape[-2]), int(shape[-1])
    if rows >= 4 * THREADS or shape[0] != 1:
        return shape, strides
    cut = -2 if mid > 1 else -1
    length = mid if mid > 1 else inner
    for parts in range(8 * THREADS, 1, -1):
        if length % parts == 0:
            step = strides[:, cut:cut + 1 or None] * (length // parts)
            if cut == -2:
                shape = [*shape[1:-2], parts, length // parts, inner]
                strides = np.concatenate([strides[:, 1:-2], step, strides[:, -2:]], axis=1)
            else:
                shape = [*shape[1:-2], parts, 1, length // parts]
                strides = np.concatenate([strides[:, 1:-2], step, strides[:, -2:-1],
                                          strides[:, -1:]], axis=1)
            return np.array(shape, dtype=np.int64), strides.astype(np.int64)
    return shape, strides


def plan_axes(axes, stride_lists):
    """(shape, strides) for the kernels: the physical axes in memory order, axes of extent 1
    dropped, neighbours merged where every operand steps evenly across them, padded to AXES
    axes at the outside. strides: int64 (operands, AXES)."""
    order = sorted(range(len(axes)), key=lambda i: -axes[i][2])
    shape, strides = [], [[] for _ in stride_lists]
    for i in order:
        extent = axes[i][1]
        if extent == 1:
            continue
        pairs = zip(strides, stride_lists, strict=True)
        if shape and all(s[-1] == extent * lst[i] for s, lst in pairs):
            shape[-1] *= extent
            for s, lst in zip(strides, stride_lists, strict=True):
                s[-1] = lst[i]
            continue
        shape.append(extent)
        for s, lst in zip(strides, stride_lists, strict=True):
            s.append(lst[i])
    if len(shape) > AXES:
        raise ValueError(f"broadcast over {len(shape)} physical axes (at most {AXES})")
    pad = AXES - len(shape)
    return (np.array([1] * pad + shape, dtype=np.int64),
            np.array([[0] * pad + s for s in strides], dtype=np.int64))


WIDE = 64  # floats summed side by side in the per-channel sum of short lines
OUTER = AXES - 2  # the kernels walk rows of the outer axes, then the middle and inner one


@njit(**SERIAL)
def _start(shape, strides, row):
    """Offsets of each operand at row `row` of the OUTER axes, and its index."""
    index = np.zeros(OUTER, dtype=np.int64)
    offsets = np.zeros(strides.shape[0], dtype=np.int64)
    rest = row
    for axis in range(OUTER - 1, -1, -1):
        index[axis] = rest % shape[axis]
        rest //= shape[axis]
        for k in range(strides.shape[0]):
            offsets[k] += index[axis] * strides[k, axis]
    return index, offsets


@njit(**SERIAL)
def _next(shape, strides, index, offsets):
    """Advance (index, offsets) by one row (an odometer over the OUTER axes)."""
    for axis in range(OUTER - 1, -1, -1):
        index[axis] += 1
        for k in range(strides.shape[0]):
            offsets[k] += strides[k, axis]
        if index[axis] < shape[axis]:
            return
        for k in range(strides.shape[0]):
            offsets[k] -= shape[axis] * strides[k, axis]
        index[axis] = 0


@njit(**SERIAL)
def _apply(code, u, v, w):
    if code == ADD:
        return u + v
    if code == SUBTRACT:
        return u - v
    if code == MULTIPLY:
        return u * v
    if code == DIVIDE:
        return u / v
    if code == MAXIMUM:
        return max(u, v)
    if code == MINIMUM:
        return min(u, v)
    if code == DIVIDE_GRAD_DIVISOR:
        return -w * u / (v * v)
    if code == EXTREME_SHARE_FIRST:
        return w * (F(u > v) + F(0.5) * F(u == v))
    if code == EXTREME_SHARE_SECOND:
        return w * (F(v > u) + F(0.5) * F(u == v))
    if code == POWER:
        return u ** v
    if code == POWER_GRAD_BASE:
        return F(0.0) if v == 0 else w * v * u ** (v - F(1.0))
    if code == SELECT:
        return v if u != 0 else w
    if code == SELECT_FIRST:
        return v if u != 0 else F(0.0)
    if code == SELECT_SECOND:
        return F(0.0) if u != 0 else v
    if code >= EQUAL:
        return _compare(code, u, v)
    return w * np.log(F(1.0) if u == 0 else u) * u ** v


@njit(**SERIAL)
def _compare(code, u, v):
    if code == EQUAL:
        return F(u == v)
    if code == NOT_EQUAL:
        return F(u != v)
    if code == GREATER:
        return F(u > v)
    if code == GREATER_EQUAL:
        return F(u >= v)
    if code == LESS:
        return F(u < v)
    return F(u <= v)


@njit(**SERIAL)
def _elementwise_rows(code, out, x, y, z, shape, strides, first, last):
    """elementwise_kernel's work on rows [first, last) of the OUTER axes."""
    mid, inner = shape[AXES - 2], shape[AXES - 1]
    index, offsets = _start(shape, strides, first)
    for _ in range(first, last):
        for j in range(mid):
            o = offsets[0] + j * strides[0, AXES - 2]
            a = offsets[1] + j * strides[1, AXES - 2]
            b = offsets[2] + j * strides[2, AXES - 2]
            c = offsets[3] + j * strides[3, AXES - 2]
            so, sx = strides[0, AXES - 1], strides[1, AXES - 1]
            sy, sz = strides[2, AXES - 1], strides[3, AXES - 1]
            for e in range(inner):
                out[U(o + e * so)] = _apply(code, x[U(a + e * sx)], y[U(b + e * sy)],
                                            z[U(c + e * sz)])
        _next(shape, strides, index, offsets)


@njit(**PARALLEL)
def elementwise_kernel(code, out, x, y, z, shape, strides):
    """out = f(x, y, z) per `code`; strides rows: out, x, y, z (z unused by x (op) y).
    (The loops live in serial functions: numba compiles a small parallel body faster.)
    """
    rows = 1
    for axis in range(OUTER):
        rows *= shape[axis]
    chunks = min(rows, 8 * get_num_threads())
    for chunk in prange(chunks):
        _elementwise_rows(code, out, x, y, z, shape, strides, rows * chunk // chunks,
                          rows * (chunk + 1) // chunks)


@njit(**SERIAL)
def _reduce_rows(part, g, m, shape, strides, first, last):
    """reduce_kernel's work on rows [first, last) of the OUTER axes, into one partial row."""
    mid, inner = shape[AXES - 2], shape[AXES - 1]
    om, gm = strides[0, AXES - 2], strides[1, AXES - 2]
    oi, gi = strides[0, AXES - 1], strides[1, AXES - 1]
    fused = m.size > 0
    index, offsets = _start(shape, strides, first)
    for _ in range(first, last):
        row_o, row_a = offsets[0], offsets[1]
        if oi == 1 and gi == 1 and om == 0:
            # the bias (and scale) gradient's case: a few floats kept, many lines of them
            # summed, into a local array LLVM keeps in registers
            if gm == inner and WIDE % inner == 0 and (mid * inner) % WIDE == 0:
                # short lines back to back (nChw8c's 8 lanes): WIDE floats at a time, a loop
                # of constant length that vectorizes, then the lanes folded
                width, lines, step = WIDE, mid * inner // WIDE, WIDE
            else:
                width, lines, step = inner, mid, gm
            acc = np.zeros(width, dtype=np.float32)
            if fused:
                for j in range(lines):
                    a = row_a + j * step
                    for e in range(width):
                        acc[e] += g[U(a + e)] * m[U(a + e)]
            else:
                for j in range(lines):
                    a = row_a + j * step
                    for e in range(width):
                        acc[e] += g[U(a + e)]
            for e in range(width):
                part[U(row_o + e % inner)] += acc[e]
        else:
            for j in range(mid):
                _reduce_line(part, g, m, row_o + j * om, row_a + j * gm, inner, oi, gi, fused)
        _next(shape, strides, index, offsets)


@njit(inline="always", **SERIAL)
def _reduce_line(part, g, m, o, a, inner, oi, gi, fused):
    """Add one line of `inner` elements of g (times m) into part."""
    if oi == 1 and gi == 1:  # a kept inner axis: nhwc's C, nChw8c's 8 lanes
        if fused:
            for e in range(inner):
                part[U(o + e)] += g[U(a + e)] * m[U(a + e)]
        else:
            for e in range(inner):
                part[U(o + e)] += g[U(a + e)]
    elif oi == 0 and gi == 1:  # a reduced inner axis: nchw's H * W
        total = F(0.0)
        if fused:
            for e in range(inner):
                total += g[U(a + e)] * m[U(a + e)]
        else:
            for e in range(inner):
                total += g[U(a + e)]
        part[U(o)] += total
    else:
        for e in range(inner):
            value = g[U(a + e * gi)]
            if fused:
                value *= m[U(a + e * gi)]
            part[U(o + e * oi)] += value


@njit(**PARALLEL)
def reduce_kernel(out, g, m, scale, shape, strides, partials):
    """out = scale * sum of g (times m when m is not empty) over the axes where out's stride
    is 0; strides rows: out, g, m (m in g's layout). partials: (THREADS, out.size) scratch
    (one row per range of rows).

    The rows of the outer axes are cut into one contiguous range per thread; each range adds
    into its own partial row, so the common cases run as contiguous, vectorized inner loops:
    a kept inner axis (per-channel sum of nhwc / nChw8c: part[c] += g[c]) or a reduced one
    (nchw: a sum of H*W contiguous floats). A last pass adds the partial rows up.
    """
    rows = 1
    for axis in range(OUTER):
        rows *= shape[axis]
    ranges = min(rows, partials.shape[0])
    for t in prange(ranges):
        part = partials[t]  # one row per range, not per thread id: never zeroed twice
        part[:] = 0.0
        _reduce_rows(part, g, m, shape, strides, rows * t // ranges, rows * (t + 1) // ranges)
    for i in prange(out.size):
        total = F(0.0)
        for t in range(ranges):
            total += partials[t, U(i)]
        out[U(i)] = scale * total


@njit(**PARALLEL)
def zero_kernel(out):
    """out = 0: the gradient of a comparison (a step function) with respect to its inputs."""
    for i in prange(out.size):
        out[U(i)] = F(0.0)
