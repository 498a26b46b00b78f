"""y = x * scales[row]: one scale per run of `inner` consecutive elements, float32 or bf16.

Dropout with a noise shape of (None, 1, 1, 1) (EfficientNet's and ConvNeXt's stochastic depth)
multiplies every sample by one number. oneDNN 3.2's binary primitive runs its reference kernel
("ref:any") for that (N, 1, 1, 1) broadcast onto the blocked nChw16c layouts convolutions
produce, about 50 ms for one 16 x 24 x 56 x 56 tensor on a Xeon with AVX-512. In every layout
kiln uses the batch axis is the outermost, so a sample is one run of consecutive bytes (the
zero padding of a blocked channel axis included, which stays zero): this kernel scales those
runs in the layout as it is, memory-bound. The same holds for any mask whose varying axes
are the outermost of the layout in their logical order ((N, C, 1, 1) on nchw), which
`outer_run` detects.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from .numba_config import PARALLEL, njit, prange

U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32
PIECE = 16384  # elements a thread scales at a time: several pieces a sample on 2+ threads


@njit(**PARALLEL)
def outer_scale_f32(x, y, scales, inner):
    """y[r * inner + e] = x[r * inner + e] * scales[r]; x and y may be the same array."""
    pieces = (inner + PIECE - 1) // PIECE
    for job in prange(scales.size * pieces):
        row = job // pieces
        start = row * inner + (job - row * pieces) * PIECE
        stop = min(start + PIECE, (row + 1) * inner)
        scale = scales[row]
        for i in range(start, stop):
            y[U(i)] = x[U(i)] * scale


@njit(**PARALLEL)
def outer_scale_bf16(x, y, scales, inner):
    """outer_scale_f32 on the uint16 bits of bf16 x and y: widened, scaled in float32,
    rounded back to nearest even."""
    pieces = (inner + PIECE - 1) // PIECE
    for job in prange(scales.size * pieces):
        row = job // pieces
        start = row * inner + (job - row * pieces) * PIECE
        stop = min(start + PIECE, (row + 1) * inner)
        scale = scales[row]
        for i in range(start, stop):
            value = np.uint32(np.uint32(x[U(i)]) << np.uint32(16)).view(F)
            bits = F(value * scale).view(np.uint32)
            bits += np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
            y[U(i)] = np.uint16(bits >> np.uint32(16))


ITEMSIZE = {dnnl.f32: 4, dnnl.bf16: 2}


def outer_run(desc, dims, axes):
    """The number of consecutive elements each entry of a mask varying along logical `axes`
    covers in layout `desc`, or None when those axes are not the outermost of the layout (in
    their logical order, densely) or desc is not a blocked-kind f32 / bf16 layout.

    dims: the logical dims of desc; axes of size 1 are ignored (they do not vary)."""
    key = layout_key(desc)
    if len(key) != 6 or key[1] not in ITEMSIZE:
        return None
    strides, block_axes = key[3], key[5]
    axes = [a for a in sorted(axes) if dims[a] > 1]
    if any(a in block_axes for a in axes):
        return None
    total = desc.size // ITEMSIZE[key[1]]
    rows = int(np.prod([dims[a] for a in axes]))
    if total % rows:
        return None
    inner = total // rows
    expected = inner
    for a in reversed(axes):  # innermost varying axis first
        if strides[a] != expected:
            return None
        expected *= dims[a]
    return inner


def outer_scale_call(builder, source, target, scales, inner, label):
    """A planned call target = source * scales per run of `inner` elements (see outer_run).

    float32 buffers are read at run time (they keep their place in liveness sharing); bf16
    ones are captured as their uint16 bits, so their bytes are kept."""
    if source.desc.data_type == dnnl.f32:
        return builder.memory_kernel(outer_scale_f32, (source, target, scales, np.int64(inner)),
                                     label)
    for memory in (source, target):
        builder.keep(memory)
    return builder.kernel(outer_scale_bf16, (
        source.as_array(np.uint16), target.as_array(np.uint16), scales.as_array(),
        np.int64(inner)), label)
