"""2x2 max pooling followed by dropout, as one pass each way (training, f32).

mnist_cnn and cifar10_cnn both write `MaxPooling2D((2, 2))` then `Dropout(0.25)` after a relu
convolution. Run separately that is four passes over memory in a training step (pool forward,
dropout forward, dropout backward, pool backward) plus the relu derivative; fused it is two:

- forward reads the 2x2 window, keeps the max, applies the dropout mask and scale, and stores
  one byte per output: the argmax (2 bits), whether the element was kept (bit 2) and whether
  the max is > 0 (bit 3);
- backward reads that byte and the output gradient and writes the whole window (the gradient at
  the argmax, zeros elsewhere), so no separate zero-fill pass is needed.

The relu derivative comes free: the max of relu outputs is > 0 exactly when the relu output at
the argmax is, so bit 3 is the relu mask and backward never reads the outputs again. The
dropout mask is the one `DropoutOp` draws (same hash of the same memory index), so the fused and
separate paths give identical results.

Anything else (inference, bf16, other windows, layouts with more than one block) runs the
separate oneDNN pooling and the dropout op.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from .base import Op
from .dropout import fill_keeps, keep_scratch, keep_threshold, step_salt
from .numba_config import PARALLEL, get_thread_id, njit, prange

# Indices are cast to unsigned before subscripting: numba wraps negative indices around, and
# that check turns the contiguous loads and stores of these loops into gathers and scatters
# (several times slower: docs/performance.md, 'Decisions and their measurements'). Each
# tensor is walked as slabs (one image and block of channels) of rows x columns x lanes,
# lanes being the contiguous channels (16 in nChw16c, C in nhwc).
U = np.uint64


@njit(**PARALLEL)
def max_pool_dropout_forward_kernel(x, y, codes, geometry, keep_threshold, scale, counter,
                                    words):
    """y = max over the 2x2 window * keep * scale; codes = argmax | kept << 2 | (max > 0) << 3.

    geometry = [slabs, lanes, in_h, in_w, out_h, out_w]; counter = [seed, step] as in DropoutOp;
    words = keep_scratch(out_w * lanes).
    """
    slabs, lanes = geometry[0], geometry[1]
    in_h, in_w, out_h, out_w = geometry[2], geometry[3], geometry[4], geometry[5]
    in_slab, out_slab = in_h * in_w * lanes, out_h * out_w * lanes
    row, out_row = in_w * lanes, out_w * lanes
    salt = step_salt(counter)
    for slab in prange(slabs):
        for oh in range(out_h):
            top = slab * in_slab + 2 * oh * row
            upper = x[top:top + row]
            lower = x[top + row:top + 2 * row]
            first = slab * out_slab + oh * out_row
            out = y[first:first + out_row]
            code = codes[first:first + out_row]
            # the row's dropout mask first (Dropout's: the same memory index and step)
            fill_keeps(first, out_row, salt, keep_threshold, words[get_thread_id()],
                       code)
            for ow in range(out_w):
                for lane in range(lanes):
                    i = 2 * ow * lanes + lane
                    a = upper[U(i)]
                    b = upper[U(i + lanes)]
                    c = lower[U(i)]
                    d = lower[U(i + lanes)]
                    # the first maximum in window order, as oneDNN's max pooling picks it
                    where = np.int32(b > a)
                    best = max(a, b)
                    where += np.int32(c > best) * (2 - where)
                    best = max(best, c)
                    where += np.int32(d > best) * (3 - where)
                    best = max(best, d)
                    o = ow * lanes + lane
                    keep = code[U(o)]
                    out[U(o)] = best * (scale * keep)
                    code[U(o)] = np.uint8(where + 4 * np.int32(keep) + 8 * np.int32(best > 0))
    counter[1] += U(1)


@njit(**PARALLEL)
def max_pool_dropout_backward_kernel(grad_out, codes, grad_in, geometry, scale, relu):
    """Every element of grad_in: the window's argmax gets grad * scale where the element was
    kept and, when `relu` (1, else 0) is set, the max was > 0; the rest of the window 0."""
    slabs, lanes = geometry[0], geometry[1]
    in_h, in_w, out_h, out_w = geometry[2], geometry[3], geometry[4], geometry[5]
    in_slab, out_slab = in_h * in_w * lanes, out_h * out_w * lanes
    row, out_row = in_w * lanes, out_w * lanes
    zero = np.float32(0.0)
    for slab in prange(slabs):
        for oh in range(out_h):
            first = slab * out_slab + oh * out_row
            code = codes[first:first + out_row]
            grad = grad_out[first:first + out_row]
            top = slab * in_slab + 2 * oh * row
            # one input row at a time: storing to both rows in one loop runs slower
            # (docs/performance.md, 'Decisions and their measurements')
            for half in range(2):
                target = grad_in[top + half * row:top + (half + 1) * row]
                for ow in range(out_w):
                    for lane in range(lanes):
                        o = ow * lanes + lane
                        c = np.int32(code[U(o)])
                        kept, positive = (c >> 2) & 1, (c >> 3) & 1
                        passes = np.float32(kept & (positive | (1 - relu)))
                        g = grad[U(o)] * scale * passes
                        where = (c & 3) - 2 * half
                        i = 2 * ow * lanes + lane
                        target[U(i)] = g * np.float32(where == 0)
                        target[U(i + lanes)] = g * np.float32(where == 1)
                # an odd last column is in no window
                for j in range(2 * out_row, row):
                    target[U(j)] = zero
        # nor is an odd last row
        for j in range(slab * in_slab + 2 * out_h * row, (slab + 1) * in_slab):
            grad_in[U(j)] = zero


def _slab_walk(desc):
    """(slabs, lanes) when `desc` stores each (image, channel block) as one dense
    rows x columns x lanes slab, slabs back to back; else None."""
    key = layout_key(desc)
    if len(key) < 6 or len(desc.dims) != 4:
        return None
    dims, _, _, strides, blocks, block_dims = key
    n, channels, h, w = dims
    if len(blocks) == 1 and block_dims == (1,) and channels % blocks[0] == 0:
        lanes = blocks[0]                          # nChw16c, nChw8c
    elif not blocks:
        lanes = channels if strides[1] == 1 else 1  # nhwc, nchw
    else:
        return None
    blocks_per_image = channels // lanes
    slab = h * w * lanes
    channel_stride = slab if blocks_per_image > 1 else strides[1]  # unused with one block
    if tuple(strides) != (blocks_per_image * slab, channel_stride, w * lanes, lanes):
        return None
    return n * blocks_per_image, lanes


def slab_geometry(input_desc, output_desc):
    """The kernels' geometry array, or None for a layout they do not handle."""
    walk_in, walk_out = _slab_walk(input_desc), _slab_walk(output_desc)
    if walk_in is None or walk_in != walk_out:
        return None
    (slabs, lanes), (_, _, in_h, in_w) = walk_in, input_desc.dims
    out_h, out_w = output_desc.dims[2], output_desc.dims[3]
    return np.array([slabs, lanes, in_h, in_w, out_h, out_w], dtype=np.int64)


class MaxPoolDropoutOp(Op):
    """`pool` (a 2x2, stride 2, 'valid' max Pooling2DOp) then `dropout` (a DropoutOp)."""

    per_image = True

    def __init__(self, pool, dropout):
        self.pool = pool
        self.dropout = dropout
        self.name = f"{pool.name}+{dropout.name}"

    @staticmethod
    def applies_to(pool, dropout):
        return (pool.mode == "max" and pool.pool_size == (2, 2) and pool.strides == (2, 2)
                and pool.padding == "valid" and dropout.rate > 0.0)

    def output_dims(self, input_dims):
        return self.pool.output_dims(input_dims)

    def parameter_dims(self, input_dims):
        return {}

    def forward(self, builder, x, need_input_grad=True):
        geometry = None
        if builder.training and x.memory.desc.data_type == dnnl.f32 and x.activation in (
                None, "linear", "relu"):
            output_desc = self.pool.output_desc(builder, x)
            geometry = slab_geometry(x.memory.desc, output_desc)
        if geometry is None:
            return self._separate(builder, x, need_input_grad)

        # relu's derivative is bit 3 of the codes (see the module docstring)
        # (only for the tensor's one consumer, as in pooling.py)
        relu = np.int32(x.activation == "relu" and x.consumers == 1)
        if relu:
            x.activation_grad_applied_downstream = True
        # This backward needs no window (the codes have the argmax) and handles relu's
        # derivative: if the producer's backward does not read its output either, nothing
        # reads `x` after this op.
        source = x.memory if x.backward_reads_memory else builder.transient(x.memory)
        output = builder.allocate(output_desc)
        codes = np.zeros(output_desc.size // 4, dtype=np.uint8)
        scale = np.float32(1.0 / (1.0 - self.dropout.rate))
        builder.add_forward(builder.kernel(
            max_pool_dropout_forward_kernel,
            (source.as_array(), output.as_array(), codes, geometry,
             keep_threshold(self.dropout.rate), scale, self.dropout.counter,
             keep_scratch(int(geometry[5] * geometry[1]))),
            f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, output_desc, f"{self.name} gradient",
                                   backward=True)
            input_grad = builder.allocate(source.desc)
            builder.add_backward(builder.kernel(
                max_pool_dropout_backward_kernel,
                (grad.as_array(), codes, input_grad.as_array(), geometry, scale, relu),
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward

    def _separate(self, builder, x, need_input_grad):
        pooled, pool_backward = self.pool.forward(builder, x, need_input_grad)
        dropped, dropout_backward = self.dropout.forward(builder, pooled, need_input_grad)

        def backward(output_grad):
            grad = dropout_backward(output_grad)
            return None if grad is None else pool_backward(grad)

        return dropped, backward
