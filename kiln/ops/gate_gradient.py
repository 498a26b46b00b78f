"""The backward of a squeeze-and-excitation product under bf16: y = x * gate, x of (N, C, H, W)
in bf16, gate of (N, C, 1, 1) (EfficientNet's `Multiply` of the features by their gates).

BroadcastBinaryOp's general backward (broadcast_gradients.py) works in float32 over plain
layouts: for bf16 operands it widens the output gradient and both operands to plain float32
and narrows the gradients back, five reorders of activation size per product. Here instead:

    dx = dy * gate       oneDNN's binary mul, the forward's primitive on dy (bf16, jit)
    dgate[n, c] = sum over h, w of dy * x     gate_gradient_kernel, on the bf16 bits of dy
                                              and x in their layout (nChw16c, nChw8c, nhwc)

one pass over dy and x, each thread summing its (image, channel block) pairs.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .depthwise_weights import channel_walk
from .numba_config import PARALLEL, njit, prange

U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32


@njit(**PARALLEL)
def gate_gradient_kernel(dy, x, geometry, strides, out):
    """out[n * C + c] = sum over h, w of dy * x (the uint16 bits of bf16, one layout).

    geometry: (N, channel blocks, lanes, C, H, W); strides: elements of (image, block, row,
    column); the lanes of a block are consecutive channels."""
    n_images, blocks, lanes, channels, height, width = (geometry[0], geometry[1], geometry[2],
                                                        geometry[3], geometry[4], geometry[5])
    for job in prange(n_images * blocks):
        n = job // blocks
        cb = job - n * blocks
        acc = np.zeros(lanes, F)
        base = n * strides[0] + cb * strides[1]
        for h in range(height):
            for w in range(width):
                at = base + h * strides[2] + w * strides[3]
                for lane in range(lanes):
                    a = np.uint32(np.uint32(dy[U(at + lane)]) << np.uint32(16)).view(F)
                    b = np.uint32(np.uint32(x[U(at + lane)]) << np.uint32(16)).view(F)
                    acc[U(lane)] += a * b
        for lane in range(min(lanes, channels - cb * lanes)):
            out[U(n * channels + cb * lanes + lane)] = acc[U(lane)]


def applies(full_desc, gate_dims, operation):
    """Whether a bf16 product of a full-size operand in `full_desc` and an operand of logical
    `gate_dims` takes this backward: multiply, gate (N, C, 1, 1), a channel-walkable layout."""
    dims = tuple(full_desc.dims)
    return (operation == "multiply" and full_desc.data_type == dnnl.bf16 and len(dims) == 4
            and tuple(gate_dims) == (dims[0], dims[1], 1, 1)
            and channel_walk(full_desc) is not None)


def plan_backward(builder, name, forward_primitive, full, gate, output_grad, need):
    """Plan the gradients of y = full * gate (see the module docstring). full: the full-size
    operand's Memory (bf16); gate: the gate as the forward primitive read it; need: (full's
    gradient wanted, gate's). Returns (full's gradient or None, gate's f32 gradient or None)
    as Memories; the gate's is in a plain (N, C, 1, 1) layout."""
    desc = full.desc
    grad = builder.reorder(output_grad, desc, f"{name} gradient to layout", backward=True)
    full_grad = gate_grad = None
    if need[0]:
        full_grad = builder.allocate(desc)
        builder.add_backward(builder.bind(forward_primitive, {
            dnnl.ARG_SRC: grad, dnnl.ARG_SRC_1: gate, dnnl.ARG_DST: full_grad},
            f"{name} backward 0"))
    if need[1]:
        lanes, blocks, strides = channel_walk(desc)
        n, c, h, w = desc.dims
        gate_grad = builder.allocate(MemoryDesc.with_tag((n, c, 1, 1), dnnl.f32))
        for memory in (grad, full):
            builder.keep(memory)
        builder.add_backward(builder.memory_kernel(gate_gradient_kernel, (
            grad.as_array(np.uint16), full.as_array(np.uint16),
            np.array([n, blocks, lanes, c, h, w], np.int64), np.array(strides, np.int64),
            gate_grad), f"{name} backward 1"))
    return full_grad, gate_grad
