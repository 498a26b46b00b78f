"""The weight (and bias) gradient of a depthwise convolution where oneDNN has no fast kernel.

oneDNN 3.2's jit depthwise backward-weights kernel (jit_dw) takes 3x3 kernels only: for the
5x5 depthwise convolutions of EfficientNet and MobileNetV3 it falls back to its gemm-based
convolution in plain nchw (x64:gemm:jit), which also costs two reorders of activation size,
about 58 ms for EfficientNet-B0's block3b_dwconv at batch 16 on an AVX-512 Xeon. This numba
kernel computes the gradient in the layouts forward already has (nChw16c / nChw8c blocks, or
nhwc: channels innermost, vectorized across them), each thread summing its (image,
channel block) pairs into its own partial row, then one pass adding the rows up.

    d_kernel[c, i, j] = sum over n, oh, ow of dy[n, c, oh, ow] * x[n, c, oh*sh + i*dh - pt,
                                                                     ow*sw + j*dw - pl]
    d_bias[c] = sum over n, oh, ow of dy[n, c, oh, ow]

`plan_depthwise_weights` decides (one output channel per input channel, both tensors
walkable with one channel lane count, float32 or bf16 activations: oneDNN's bf16 gemm
convolution is slower still) and plans the call.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc, layout_key
from .layout_preference import is_reference
from .numba_config import PARALLEL, SERIAL, THREADS, get_thread_id, njit, prange

U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32
# geometry's entries (an int64 array, so one compiled kernel serves every layer)
N, BLOCKS, LANES, C, OH, OW, IH, IW, KH, KW, SH, SW, DH, DW, PT, PL = range(16)


@njit(inline="always", **SERIAL)
def _value(array, index, bf16):
    """array[index] as float32: the uint16 bits of a bf16 value widened when `bf16`."""
    if bf16:
        return np.uint32(np.uint32(array[U(index)]) << np.uint32(16)).view(F)
    return F(array[U(index)])


@njit(**PARALLEL)
def depthwise_weights_kernel(x, dy, geometry, x_strides, dy_strides, d_kernel, d_bias,
                             partial, partial_bias, bf16):
    """d_kernel (C, KH, KW) and d_bias (C,) (a zero-size array: no bias) from x and dy
    (float32, or the uint16 bits of bf16 when `bf16`); the sums are float32.

    x_strides, dy_strides: element strides of (image, channel block, row, column); the
    channels of a block are consecutive (LANES of them). partial: (threads, BLOCKS, KH, KW,
    LANES) float32 scratch; partial_bias: (threads, BLOCKS, LANES)."""
    g = geometry
    lanes, blocks = g[LANES], g[BLOCKS]
    partial[:] = 0.0
    partial_bias[:] = 0.0
    for job in prange(g[N] * blocks):
        n = job // blocks
        cb = job - n * blocks
        t = get_thread_id()
        x0 = n * x_strides[0] + cb * x_strides[1]
        y0 = n * dy_strides[0] + cb * dy_strides[1]
        for i in range(g[KH]):
            for j in range(g[KW]):
                acc = partial[t, cb, i, j]
                first, last = 0, g[OW]  # the columns whose input column is inside the image
                while first < last and first * g[SW] + j * g[DW] - g[PL] < 0:
                    first += 1
                while last > first and (last - 1) * g[SW] + j * g[DW] - g[PL] >= g[IW]:
                    last -= 1
                for oh in range(g[OH]):
                    ih = oh * g[SH] + i * g[DH] - g[PT]
                    if ih < 0 or ih >= g[IH]:
                        continue
                    x_row = x0 + ih * x_strides[2] + (j * g[DW] - g[PL]) * x_strides[3]
                    y_row = y0 + oh * dy_strides[2]
                    for ow in range(first, last):
                        xo = x_row + ow * g[SW] * x_strides[3]
                        yo = y_row + ow * dy_strides[3]
                        for lane in range(lanes):
                            acc[U(lane)] += (_value(dy, yo + lane, bf16)
                                             * _value(x, xo + lane, bf16))
        if d_bias.size:
            acc = partial_bias[t, cb]
            for oh in range(g[OH]):
                for ow in range(g[OW]):
                    yo = y0 + oh * dy_strides[2] + ow * dy_strides[3]
                    for lane in range(lanes):
                        acc[U(lane)] += _value(dy, yo + lane, bf16)
    for c in prange(g[C]):
        cb, lane = c // lanes, c % lanes
        for i in range(g[KH]):
            for j in range(g[KW]):
                total = F(0.0)
                for t in range(partial.shape[0]):
                    total += partial[t, cb, i, j, lane]
                d_kernel[(c * g[KH] + i) * g[KW] + j] = total
        if d_bias.size:
            total = F(0.0)
            for t in range(partial.shape[0]):
                total += partial_bias[t, cb, lane]
            d_bias[c] = total


def channel_walk(desc):
    """(lanes, channel blocks, element strides of (image, block, row, column)) of a 4D f32
    or bf16 layout whose channels come in consecutive lanes (nChw16c, nChw8c, nhwc), or
    None."""
    key = layout_key(desc)
    if len(key) != 6 or key[1] not in (dnnl.f32, dnnl.bf16) or len(desc.dims) != 4:
        return None
    dims, strides, blocks, block_axes = key[0], key[3], key[4], key[5]
    channels = dims[1]
    if blocks == () and strides[1] == 1:                        # nhwc
        return channels, 1, (strides[0], 0, strides[2], strides[3])
    if len(blocks) == 1 and block_axes[0] == 1:                 # nChw16c / nChw8c
        lanes = blocks[0]
        return lanes, -(-channels // lanes), (strides[0], strides[1], strides[2], strides[3])
    return None


def walk_tag(walk):
    """The format tag of a channel_walk: nhwc (one block of every channel) or nChw{lanes}c."""
    lanes, blocks, strides = walk
    if strides[1] == 0:
        return dnnl.acdb
    return {16: dnnl.aBcd16b, 8: dnnl.aBcd8b, 4: dnnl.aBcd4b}.get(lanes, dnnl.aBcd16b)


def worth_replacing(primitive):
    """oneDNN's backward-weights is not its depthwise kernel (gemm over nchw, or reference)."""
    implementation = primitive.pd.implementation
    return is_reference(primitive) or "gemm" in implementation


def plan_depthwise_weights(builder, op, src, grad, weight_grads, geometry_args):
    """Plan the weight gradient with depthwise_weights_kernel if it applies; returns whether
    it did. src: the forward's input, grad: the output gradient (Memories); weight_grads:
    weight_grads(kernel desc) -> (kernel gradient Memory, bias gradient Memory or None);
    geometry_args: (kernel size, strides, dilation rate, top-left padding)."""
    walk_x, walk_y = channel_walk(src.desc), channel_walk(grad.desc)
    data_type = src.desc.data_type
    if walk_x is None or walk_y is None or walk_x[:2] != walk_y[:2] \
            or grad.desc.data_type != data_type:
        # one of them in another layout (a plain output gradient, nchw): both in the
        # forward input's layout if it is walkable, else in nChw16c
        tag = walk_tag(walk_x) if walk_x is not None else dnnl.aBcd16b
        label = f"{op.name} for weights"
        src = builder.reorder(src, MemoryDesc.with_tag(src.desc.dims, data_type, tag),
                              f"{label} input", backward=True)
        grad = builder.reorder(grad, MemoryDesc.with_tag(grad.desc.dims, data_type, tag),
                               f"{label} gradient", backward=True)
        walk_x, walk_y = channel_walk(src.desc), channel_walk(grad.desc)
    lanes, blocks = walk_x[:2]
    n, channels, ih, iw = src.desc.dims
    _, _, oh, ow = grad.desc.dims
    (kh, kw), (sh, sw), (dh, dw), (pt, pl) = geometry_args
    geometry = np.array([n, blocks, lanes, channels, oh, ow, ih, iw, kh, kw, sh, sw, dh, dw,
                         pt, pl], np.int64)
    kernel_desc = MemoryDesc.with_tag((channels, 1, 1, kh, kw), dnnl.f32, dnnl.abcde)
    d_kernel, d_bias = weight_grads(kernel_desc)
    partial = np.zeros((THREADS, blocks, kh, kw, lanes), np.float32)
    partial_bias = np.zeros((THREADS, blocks, lanes), np.float32)
    d_bias = d_bias if d_bias is not None else np.zeros(0, np.float32)
    strides = np.array(walk_x[2], np.int64), np.array(walk_y[2], np.int64)
    label = f"{op.name} backward weights"
    if data_type == dnnl.f32:
        builder.add_backward(builder.memory_kernel(depthwise_weights_kernel, (
            src, grad, geometry, *strides, d_kernel, d_bias, partial, partial_bias, False),
            label))
        return True
    # bf16: the activations' uint16 bits, captured (their bytes kept); the gradients are f32
    for memory in (src, grad):
        builder.keep(memory)
    builder.add_backward(builder.memory_kernel(depthwise_weights_kernel, (
        src.as_array(np.uint16), grad.as_array(np.uint16), geometry, *strides, d_kernel,
        d_bias, partial, partial_bias, True), label))
    return True
