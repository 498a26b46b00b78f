"""Non-temporal (streaming) stores for numba kernels whose output is too large for the cache.

An ordinary store to a line not in the cache first reads that line from memory (write
allocate), so a kernel reading x and writing y moves three tensors' worth of bytes, not two,
and its output evicts the input from the cache. A streaming store writes a whole 64-byte
line straight to memory. numba has no API for them; the intrinsic here emits LLVM vector
stores with `!nontemporal` metadata (vmovntps on x86) of 16 floats (one line) at 64-byte
aligned addresses.

Only for large outputs (STREAMING_BYTES): a small output is better left in the cache, where
the next op reads it.

`stream_affine_run` is the loop the kernels call: out[a + e] = x[a + e] * scale + shift (then
the relu) over a run of elements whose parameters repeat with a period (a line of one
channel: 1; nhwc's channels back to back: C), scalar up to the first aligned output address
and after the last whole vector. `store_fence` ends a thread's streaming stores: they are
weakly ordered, and must be visible to the other threads when the parallel region ends.
"""

import numpy as np
from llvmlite import ir

from .numba_config import SERIAL, intrinsic, njit, types

VECTOR = 16  # floats in one 64-byte streaming store (a cache line)
LINE_BYTES = 4 * VECTOR
# Outputs from this size on are streamed: below it ordinary stores were as fast or faster (the
# output still in cache for the next op), above it streaming stores won. Measurements:
# docs/performance.md, 'Decisions and their measurements'.
STREAMING_BYTES = 16 << 20
U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32


def _vector_pointer(context, builder, array_type, array, index):
    """An LLVM <16 x float>* at element `index` of a numba float32 array."""
    data = context.make_array(array_type)(context, builder, array).data
    element = builder.gep(data, [index])
    return builder.bitcast(element, ir.VectorType(ir.FloatType(), VECTOR).as_pointer())


@intrinsic
def _stream_affine_vector(typingctx, out, x, index, scale, shift, lane, relu):
    """out[index:index + 16] = x[index:...] * scale[lane:...] + shift[lane:...] (then
    max(., 0) when relu) by one streaming store; out + index must be 64-byte aligned."""
    signature = types.void(out, x, index, scale, shift, lane, relu)

    def codegen(context, builder, sig, args):
        out_v, x_v, index_v, scale_v, shift_v, lane_v, relu_v = args
        out_t, x_t, _, scale_t, shift_t, _, _ = sig.args
        value = builder.load(_vector_pointer(context, builder, x_t, x_v, index_v), align=4)
        factor = builder.load(_vector_pointer(context, builder, scale_t, scale_v, lane_v),
                              align=4)
        offset = builder.load(_vector_pointer(context, builder, shift_t, shift_v, lane_v),
                              align=4)
        fast = ("fast",)  # as the kernels' fastmath: x * scale + shift becomes one fma
        value = builder.fadd(builder.fmul(value, factor, flags=fast), offset, flags=fast)
        zero = ir.Constant(value.type, None)
        # max(v, 0) as numba's max() in the scalar loops: v where v > 0 or v is nan, else 0
        clipped = builder.select(builder.fcmp_unordered(">", value, zero), value, zero)
        value = builder.select(relu_v, clipped, value)
        store = builder.store(value, _vector_pointer(context, builder, out_t, out_v, index_v),
                              align=LINE_BYTES)
        store.set_metadata("nontemporal", builder.module.add_metadata(
            [ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return signature, codegen


@intrinsic
def store_fence(typingctx):
    """A full memory fence (mfence on x86, which orders streaming stores too)."""
    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@njit(**SERIAL)
def streams(nbytes):
    """Whether an output of `nbytes` is written with streaming stores."""
    return nbytes >= STREAMING_BYTES


@njit(inline="always", **SERIAL)
def lane_period(channels):
    """The period of the lanes of a run whose parameters repeat every `channels` elements: a
    multiple of it, at least VECTOR (so a vector's first lane steps back by one period)."""
    return channels * ((VECTOR + channels - 1) // channels)


@njit(inline="always", **SERIAL)
def fill_lanes(lanes, values, first, channels):
    """lanes[m] = values[first + m % channels] for all of lanes (period + VECTOR of them)."""
    for m in range(lanes.size):
        lanes[U(m)] = values[U(first + m % channels)]


@njit(inline="always", **SERIAL)
def _scalar(out, x, i, scale, shift, lane, relu):
    value = x[U(i)] * scale[U(lane)] + shift[U(lane)]
    out[U(i)] = max(value, F(0.0)) if relu else value


@njit(inline="always", **SERIAL)
def _step(lane, period, count):
    """The lane `count` elements on (count <= VECTOR: lane < period + VECTOR <= 2 * period)."""
    lane += count
    return lane - period if lane >= period else lane


@njit(**SERIAL)
def stream_affine_run(out, x, a, count, scale, shift, period, relu):
    """out[a + e] = x[a + e] * scale[e % period] + shift[e % period] (then the relu) for e
    in [0, count), streamed. scale and shift: `period + VECTOR` lanes (fill_lanes), period
    from lane_period."""
    misalignment = (out.ctypes.data + 4 * a) % LINE_BYTES
    head = 0 if misalignment == 0 else (LINE_BYTES - misalignment) // 4
    if misalignment % 4 != 0:  # not float-aligned: no vector is, store it all scalar
        head = count
    lane, e = 0, 0
    for _ in range(min(head, count)):
        _scalar(out, x, a + e, scale, shift, lane, relu)
        lane = _step(lane, period, 1)
        e += 1
    for _ in range((count - e) // VECTOR):
        _stream_affine_vector(out, x, U(a + e), scale, shift, U(lane), relu)
        lane = _step(lane, period, VECTOR)
        e += VECTOR
    for _ in range(count - e):
        _scalar(out, x, a + e, scale, shift, lane, relu)
        lane = _step(lane, period, 1)
        e += 1
