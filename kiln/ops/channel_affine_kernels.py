"""numba kernels of ChannelAffineOp (channel_affine.py): its backward in one pass, and its
forward where oneDNN's binary primitive has only a reference kernel for the layout.

The backward reads the output gradient, the output (for the relu's mask) and the input (for
the scale's gradient) once and writes the input gradient once, summing the scale's and the
shift's gradients per channel on the way: unfused, a relu backward, a shift sum, a scale sum
and a times-scale pass read and wrote the same tensors four times over.

Both kernels walk the physical axes of the activation's layout as `broadcast_kernels` does
(nhwc, nchw, nChw8c / nChw16c), with the per-channel parameters read through strides: stride
0 on the axes a channel's value is repeated over.

The forward writes a large output (streaming_stores.STREAMING_BYTES) with streaming stores
where its runs are contiguous (a row of lines back to back, or lines of one channel each):
ordinary stores would read every output line from memory first, 3 tensors' worth of traffic
for 2.
"""

import numpy as np

from .broadcast_kernels import AXES, OUTER, WIDE, _next, _start
from .numba_config import PARALLEL, SERIAL, get_num_threads, njit, prange
from .streaming_stores import (
    VECTOR,
    fill_lanes,
    lane_period,
    store_fence,
    stream_affine_run,
    streams,
)

U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32


@njit(**SERIAL)
def _backward_rows(dx, dy, y, x, scale, part_s, part_b, relu, shape, strides, first, last):
    """backward_kernel's work on rows [first, last) of the OUTER axes."""
    mid, inner = shape[AXES - 2], shape[AXES - 1]
    dm, pm = strides[0, AXES - 2], strides[1, AXES - 2]
    di, pi = strides[0, AXES - 1], strides[1, AXES - 1]
    index, offsets = _start(shape, strides, first)
    for _ in range(first, last):
        if di == 1 and pi == 1 and pm == 0:
            # one channel per element of a line, the same channels on every line (nhwc's C,
            # nChw8c's 8 lanes): sums kept in local arrays LLVM holds in registers, folded
            # into the partial row once per row
            if dm == inner and WIDE % inner == 0:  # short lines back to back: WIDE at a time
                width, lines, step = WIDE, mid * inner // WIDE, WIDE
                tail = mid * inner - lines * WIDE  # a whole number of lines, fewer than WIDE
            else:
                width, lines, step, tail = inner, mid, dm, 0
            _channel_lines(dx, dy, y, x, scale, part_s, part_b, relu, offsets[0], offsets[1],
                           inner, width, lines, step, tail)
        else:
            for j in range(mid):
                _line(dx, dy, y, x, scale, part_s, part_b, relu, offsets[0] + j * dm,
                      offsets[1] + j * pm, inner, di, pi)
        _next(shape, strides, index, offsets)


@njit(**SERIAL)
def _channel_lines(dx, dy, y, x, scale, part_s, part_b, relu, start, p, inner, width, lines,
                   step, tail):
    """`lines` runs of `width` elements (step apart), element e of channel p + e % inner,
    then `tail` more elements after them. The relu and no-relu loops are written out: a flag
    tested inside keeps them scalar."""
    acc_s = np.zeros(width, dtype=np.float32)
    acc_b = np.zeros(width, dtype=np.float32)
    lane_scale = np.empty(width, dtype=np.float32)
    for e in range(width):
        lane_scale[e] = scale[U(p + e % inner)]
    if relu:
        for j in range(lines):
            a = start + j * step
            for e in range(width):
                d, m = dy[U(a + e)], y[U(a + e)]  # both loaded: a select, not a branch
                g = d if m > F(0.0) else F(0.0)
                dx[U(a + e)] = g * lane_scale[e]
                acc_s[e] += g * x[U(a + e)]
                acc_b[e] += g
    else:
        for j in range(lines):
            a = start + j * step
            for e in range(width):
                g = dy[U(a + e)]
                dx[U(a + e)] = g * lane_scale[e]
                acc_s[e] += g * x[U(a + e)]
                acc_b[e] += g
    a = start + lines * step
    for e in range(tail):
        d = dy[U(a + e)]
        g = d if not relu or y[U(a + e)] > F(0.0) else F(0.0)
        dx[U(a + e)] = g * lane_scale[e]
        acc_s[e] += g * x[U(a + e)]
        acc_b[e] += g
    for e in range(width):
        part_s[U(p + e % inner)] += acc_s[e]
        part_b[U(p + e % inner)] += acc_b[e]


@njit(inline="always", **SERIAL)
def _line(dx, dy, y, x, scale, part_s, part_b, relu, a, p, inner, di, pi):
    """One line of `inner` elements: of one channel (nchw's H * W) or of any strides."""
    if di == 1 and pi == 0:
        s = scale[U(p)]
        total_s, total_b = F(0.0), F(0.0)
        if relu:
            for e in range(inner):
                d, m = dy[U(a + e)], y[U(a + e)]  # both loaded: a select, not a branch
                g = d if m > F(0.0) else F(0.0)
                dx[U(a + e)] = g * s
                total_s += g * x[U(a + e)]
                total_b += g
        else:
            for e in range(inner):
                g = dy[U(a + e)]
                dx[U(a + e)] = g * s
                total_s += g * x[U(a + e)]
                total_b += g
        part_s[U(p)] += total_s
        part_b[U(p)] += total_b
    else:
        for e in range(inner):
            i, q = U(a + e * di), U(p + e * pi)
            g = dy[i]
            if relu and y[i] <= F(0.0):
                g = F(0.0)
            dx[i] = g * scale[q]
            part_s[q] += g * x[i]
            part_b[q] += g


@njit(**PARALLEL)
def backward_kernel(dx, dy, y, x, scale, scale_grad, shift_grad, relu, shape, strides,
                    partials):
    """g = dy (times y > 0 when relu); dx = g * scale; scale_grad = sum(g * x) and shift_grad
    = sum(g) per channel. dx, dy, y and x share one layout (strides row 0); scale and the two
    gradients are plain per-channel vectors (row 1). dx is a buffer of its own: over dy,
    the loops run scalar (LLVM's alias check fails). partials: (2 * THREADS, channels)
    scratch, one row per range of rows (never zeroed twice), then one pass adds them up.
    """
    rows = 1
    for axis in range(OUTER):
        rows *= shape[axis]
    ranges = min(rows, partials.shape[0] // 2)
    for t in prange(ranges):
        part_s, part_b = partials[2 * t], partials[2 * t + 1]
        part_s[:] = 0.0
        part_b[:] = 0.0
        _backward_rows(dx, dy, y, x, scale, part_s, part_b, relu, shape, strides,
                       rows * t // ranges, rows * (t + 1) // ranges)
    for c in prange(scale_grad.size):
        total_s, total_b = F(0.0), F(0.0)
        for t in range(ranges):
            total_s += partials[2 * t, U(c)]
            total_b += partials[2 * t + 1, U(c)]
        scale_grad[U(c)] = total_s
        shift_grad[U(c)] = total_b


@njit(**SERIAL)
def _forward_rows(out, x, scale, shift, relu, stream, shape, strides, first, last):
    """forward_kernel's work on rows [first, last) of the OUTER axes."""
    mid, inner = shape[AXES - 2], shape[AXES - 1]
    dm, pm = strides[0, AXES - 2], strides[1, AXES - 2]
    di, pi = strides[0, AXES - 1], strides[1, AXES - 1]
    index, offsets = _start(shape, strides, first)
    channels = inner if pi == 1 else 1  # how often the parameters repeat along a run
    period = lane_period(channels)
    lanes = period + VECTOR if stream else 0
    lane_scale = np.empty(lanes, dtype=np.float32)
    lane_shift = np.empty(lanes, dtype=np.float32)
    for _ in range(first, last):
        if stream and di == 1 and pi == 1 and pm == 0 and dm == inner:
            # the row is one run of lines back to back, the same channels on every line
            fill_lanes(lane_scale, scale, offsets[1], channels)
            fill_lanes(lane_shift, shift, offsets[1], channels)
            stream_affine_run(out, x, offsets[0], mid * inner, lane_scale, lane_shift,
                              period, relu)
        elif stream and di == 1 and pi == 0:  # lines of one channel each
            for j in range(mid):
                p = offsets[1] + j * pm
                fill_lanes(lane_scale, scale, p, 1)
                fill_lanes(lane_shift, shift, p, 1)
                stream_affine_run(out, x, offsets[0] + j * dm, inner, lane_scale,
                                  lane_shift, period, relu)
        elif di == 1 and pi == 1 and pm == 0 and dm == inner and WIDE % inner == 0:
            # short lines back to back (nhwc's C, nChw8c's lanes): WIDE elements at a time
            # against lane copies of the parameters
            _forward_lanes(out, x, scale, shift, relu, offsets[0], offsets[1], inner,
                           mid * inner)
        elif di == 1 and pi == 0:  # a line of one channel: nchw's H * W
            for j in range(mid):
                a = offsets[0] + j * dm
                p = offsets[1] + j * pm
                s, t = scale[U(p)], shift[U(p)]
                if relu:
                    for e in range(inner):
                        out[U(a + e)] = max(x[U(a + e)] * s + t, F(0.0))
                else:
                    for e in range(inner):
                        out[U(a + e)] = x[U(a + e)] * s + t
        else:
            for j in range(mid):
                a = offsets[0] + j * dm
                p = offsets[1] + j * pm
                for e in range(inner):
                    i, q = U(a + e * di), U(p + e * pi)
                    value = x[i] * scale[q] + shift[q]
                    out[i] = max(value, F(0.0)) if relu else value
        _next(shape, strides, index, offsets)


@njit(**SERIAL)
def _forward_lanes(out, x, scale, shift, relu, start, p, inner, count):
    """`count` elements from `start`, element e of channel p + e % inner."""
    lane_scale = np.empty(WIDE, dtype=np.float32)
    lane_shift = np.empty(WIDE, dtype=np.float32)
    for e in range(WIDE):
        lane_scale[e] = scale[U(p + e % inner)]
        lane_shift[e] = shift[U(p + e % inner)]
    lines = count // WIDE
    if relu:
        for j in range(lines):
            a = start + j * WIDE
            for e in range(WIDE):
                out[U(a + e)] = max(x[U(a + e)] * lane_scale[e] + lane_shift[e], F(0.0))
    else:
        for j in range(lines):
            a = start + j * WIDE
            for e in range(WIDE):
                out[U(a + e)] = x[U(a + e)] * lane_scale[e] + lane_shift[e]
    a = start + lines * WIDE
    for e in range(count - lines * WIDE):
        value = x[U(a + e)] * lane_scale[e] + lane_shift[e]
        out[U(a + e)] = max(value, F(0.0)) if relu else value


@njit(**PARALLEL)
def forward_kernel(out, x, scale, shift, relu, shape, strides):
    """out = x * scale + shift (then max(., 0) when relu), strides as backward_kernel's.
    A large output is written with streaming stores (streaming_stores.py)."""
    rows = 1
    for axis in range(OUTER):
        rows *= shape[axis]
    stream = streams(4 * out.size)
    chunks = min(rows, 8 * get_num_threads())
    for chunk in prange(chunks):
        _forward_rows(out, x, scale, shift, relu, stream, shape, strides,
                      rows * chunk // chunks, rows * (chunk + 1) // chunks)
        if stream:
            store_fence()
