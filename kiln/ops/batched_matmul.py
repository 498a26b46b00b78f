"""BatchedMatmulOp: C = A · B over the last two Keras axes, on oneDNN's matmul primitive; the
engine behind keras.ops.matmul / dot / tensordot / einsum inside a model.

Two forms:
- two input tensors (arity None), attention-style: A (..., M, K) times B (..., K, N), or
  B (..., N, K) read transposed (`transpose_b`, as in einsum "bqd,bkd->bqk"); the leading
  (batch) axes are equal.
- a tensor times a trainable parameter the op owns (arity 1; `weight` = (short name, Keras
  kernel shape)), contracting the tensor's last `contract` Keras axes with the kernel's first
  `contract` axes at any rank (EinsumDense's "abc,cde->abde" and "abcd,cde->abe"): the
  tensor's Keras-ordered bytes are seen as one (M, K) matrix, M the product of the other axes,
  and the kernel's as (K, N), K and N the products of its contracted and its output axes.

The two-input form also reads its operands and writes its result with their axes permuted
(`permutes`, the batch axis staying first): multi-head attention's einsums keep the heads axis
in the middle ("aecd,abcd->acbe"), and such an operand's copy into a plain buffer is one
transposing reorder into a strided view (which converts to bf16 too under mixed precision).
An operand that already is plain row-major in the operands' type is read as it is.

Operands are read in plain Keras row-major order (a 4D channels_last tensor's logical dims
are (N, C, H, W) in nhwc, so its bytes already are). Backward is two matmuls,
dA = dC · Bᵀ and dB = Aᵀ · dC, the transposes being strided views of the same bytes
(oneDNN matmul reads arbitrary strides), never copies.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import Memory, MemoryDesc
from ..binding.post_ops import NONE, eltwise
from .base import Op
from .merge import needed
from .pad_crop import copy
from .permute import strided
from .reshape import keras_layout
from .tensor import CHANNELS_LAST, Tensor, keras_shape, logical_dims


def row_major(shape, data_type=dnnl.f32):
    return MemoryDesc.with_tag(tuple(shape), data_type)


def transposed(shape, data_type=dnnl.f32):
    """Bytes of row-major `shape` (..., R, C) seen as (..., C, R): strides, no copy."""
    *batch, rows, cols = shape
    strides = [0] * len(batch)
    step = rows * cols
    for i in range(len(batch) - 1, -1, -1):
        strides[i] = step
        step *= batch[i]
    return MemoryDesc.with_strides((*batch, cols, rows), (*strides, 1, cols), data_type)


def inverse(permutation):
    return tuple(sorted(range(len(permutation)), key=lambda axis: permutation[axis]))


def permuted(shape, permutation):
    return tuple(shape[axis] for axis in permutation)


def transposing_view(target, target_shape, permutation, source_dims, source_axes):
    data_type = target.desc.data_type
    """Row-major `target` (Keras shape `target_shape`, a source permuted by `permutation`)
    seen with the source's `source_dims`: source axis i, Keras axis `source_axes[i]`, lands
    where the permutation puts that Keras axis. A reorder into this view transposes."""
    strides = [1] * len(target_shape)
    for axis in range(len(target_shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * target_shape[axis + 1]
    position = {keras_axis: j for j, keras_axis in enumerate(permutation)}
    return Memory(strided(source_dims, [strides[position[k]] for k in source_axes], data_type),
                  target.storage)


class BatchedMatmulOp(Op):
    """Args:
        name: the op's (layer's) name.
        data_format: how Keras sees the inputs' 4D logical dims (their last Keras axis).
        transpose_b: two inputs only: B is (..., N, K) and read transposed.
        weight: None (two inputs), or (short name, kernel shape): x times the parameter
            "<name>/<short name>", Keras's row-major layout ((K, N) for a plain matmul).
        contract: with a weight, how many trailing axes of x (leading axes of the kernel)
            the product sums over; the kernel's other axes end the output's shape.
        permutes: two inputs only: None, or (A's, B's, the result's) Keras axis permutations
            (each None or starting with 0): the product of transpose(A, pa) and
            transpose(B, pb), returned as transpose(product, pc).
        scale: two inputs only: the product times this number, a post-op of the matmul (and
            of both backward matmuls): attention's 1/sqrt(key_dim) without a pass of its own.
        bias: with a weight only: None, or the short name of a second parameter with one
            value per output unit (Keras shape: the kernel's output axes), added by the
            matmul itself (oneDNN's bias argument, f32) instead of a broadcast add's pass
            over the product; its gradient, the column sums of the output gradient, is one
            more matmul (a row of ones times the gradient matrix).
    """

    def __init__(self, name, data_format=CHANNELS_LAST, transpose_b=False, weight=None,
                 contract=1, permutes=None, scale=1.0, bias=None):
        if weight is None and bias is not None:
            raise ValueError(f"BatchedMatmul '{name}': bias applies with a weight only")
        if weight is not None and (transpose_b or permutes is not None or scale != 1.0):
            raise ValueError(f"BatchedMatmul '{name}': transpose_b, permutes and scale apply "
                             "to two inputs only")
        self.bias = None if bias is None else str(bias)
        self.scale = float(scale)
        self._post_ops = (NONE if self.scale == 1.0
                          else eltwise(dnnl.eltwise_linear, self.scale, 0.0))
        self.permutes = None if permutes is None else tuple(
            None if p is None else tuple(int(a) for a in p) for p in permutes)
        if self.permutes is not None and (len(self.permutes) != 3 or any(
                p is not None and (p[0] != 0 or sorted(p) != list(range(len(p))))
                for p in self.permutes)):
            raise ValueError(f"BatchedMatmul '{name}': permutes must be three permutations "
                             f"(or None) keeping the batch axis first, got {permutes!r}")
        self.name, self.data_format, self.transpose_b = name, data_format, transpose_b
        self.weight = None if weight is None else (str(weight[0]),
                                                   tuple(int(d) for d in weight[1]))
        self.arity = None if weight is None else 1
        self.contract = int(contract)
        if weight is not None and not 1 <= self.contract < len(self.weight[1]):
            raise ValueError(f"BatchedMatmul '{name}': contract={contract} must leave at "
                             f"least one output axis of the kernel {self.weight[1]}")

    data_type = dnnl.f32  # of the operands of the plan being built (set in forward)

    def _rows(self, shape):
        return row_major(shape, self.data_type)

    def _transposed(self, shape):
        return transposed(shape, self.data_type)

    @property
    def _kernel_matrix(self):
        """The kernel as the (K, N) matrix its row-major bytes are."""
        shape = self.weight[1]
        return (int(np.prod(shape[:self.contract])), int(np.prod(shape[self.contract:])))

    @property
    def parameter_name(self):
        return f"{self.name}/{self.weight[0]}"

    def parameter_dims(self, input_dims):
        if self.weight is None:
            return {}
        dims = {self.weight[0]: (self._kernel_matrix, dnnl.ab)}
        if self.bias is not None:
            shape = self.weight[1][self.contract:]
            dims[self.bias] = (shape, (dnnl.a, dnnl.ab, dnnl.abc, dnnl.abcd)[len(shape) - 1])
        return dims

    def _keras_shapes(self, input_dims):
        return [keras_shape(d, self.data_format) for d in
                (input_dims if self.weight is None else [input_dims])]

    def output_keras_shape(self, shapes):
        label = f"BatchedMatmul '{self.name}'"
        if self.weight is not None:
            (a,), c, kernel = shapes, self.contract, self.weight[1]
            if len(a) <= c or tuple(a[-c:]) != kernel[:c]:
                raise ValueError(f"{label}: input shape {a} must end in the kernel's "
                                 f"contracted axes {kernel[:c]} (kernel shape {kernel})")
            return (*a[:-c], *kernel[c:])
        if len(shapes) != 2:
            raise ValueError(f"{label}: takes exactly 2 inputs, got {len(shapes)}")
        pa, pb, pc = self._permutations(len(shapes[0]))
        if len(shapes[0]) != len(shapes[1]) or len(pa) != len(shapes[0]) \
                or len(pb) != len(shapes[1]):
            raise ValueError(f"{label}: shapes {shapes[0]} and {shapes[1]} do not fit the "
                             f"permutations {self.permutes} (equal ranks expected)")
        product = self._product_shape(label, permuted(shapes[0], pa), permuted(shapes[1], pb))
        return permuted(product, pc)

    def _permutations(self, rank):
        identity = tuple(range(rank))
        return tuple(identity if self.permutes is None or p is None else p
                     for p in (self.permutes or (None,) * 3))

    def _product_shape(self, label, a, b):
        k, n = (b[-1], b[-2]) if self.transpose_b else (b[-2], b[-1])
        if len(a) != len(b) or len(a) < 3 or a[1:-2] != b[1:-2] or a[-1] != k:
            expected = "(..., N, K)" if self.transpose_b else "(..., K, N)"
            raise ValueError(f"{label}: shapes {a} and {b} do not fit (expected (..., M, K) "
                             f"and {expected} of equal rank >= 3, equal leading axes)")
        return (*a[:-1], n)

    def output_dims(self, input_dims):
        return logical_dims(self.output_keras_shape(self._keras_shapes(input_dims)),
                            self.data_format)

    # -- forward and backward -------------------------------------------------------------
    def _plain(self, builder, memory, dims, label, backward=False):
        """`memory` (logical `dims`, any layout) as Keras row-major bytes of the operands'
        type: the tensor itself when it already is (a layer norm's bf16 or f32 output read
        by three projections: no copy; a view of a plan input makes the plan copy its
        inputs instead of re-pointing them, plan_inputs.kernels_read_inputs), else a
        reorder, shared by the readers of one inference forward."""
        shape = keras_shape(dims, self.data_format)
        desc = (self._rows(shape) if tuple(shape) == tuple(dims)
                else keras_layout(dims, self.data_format, False, self.data_type))
        plain = builder.reorder(memory, desc, label, backward=backward)
        return plain.view(self._rows(shape))

    def _as_logical(self, builder, memory, shape):
        """A row-major buffer of Keras `shape` seen with the logical dims ops expect."""
        dims = logical_dims(shape, self.data_format)
        if tuple(dims) == tuple(shape):
            return memory
        return memory.view(keras_layout(dims, self.data_format, False, memory.desc.data_type))

    def _matmul(self, builder, src, weights, dst, label, backward, post_ops=NONE, bias=None):
        primitive = builder.primitive(*descriptor(
            "dnnl_matmul_primitive_desc_create", "matmul",
            f"{label} {src.desc.dims} x {weights.desc.dims}", src.desc, weights.desc,
            None if bias is None else bias.desc, dst.desc, post_ops=post_ops))
        args = {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: weights, dnnl.ARG_DST: dst}
        if bias is not None:
            args[dnnl.ARG_BIAS] = bias
        call = builder.bind(primitive, args, label)
        (builder.add_backward if backward else builder.add_forward)(call)

    def forward(self, builder, x, need_input_grad=None):
        tensors = list(x) if self.weight is None else [x]
        for tensor in tensors:
            if tensor.memory.desc.data_type not in (dnnl.f32, dnnl.bf16):
                raise NotImplementedError(f"BatchedMatmul '{self.name}': float32 or bfloat16 "
                                          "operands expected")
        # under mixed_bfloat16 the operands are read as bf16 (converted by a reorder when
        # they are not) and run on the bf16 (AMX) matmul; a tensor times a weight writes
        # bf16, two tensors' product is f32 (the masks and softmax after it read f32), the
        # weight gradients are f32
        self.data_type = builder.data_type
        if self.weight is None:
            return self._forward_pair(builder, tensors, needed(need_input_grad, 2))
        return self._forward_weight(builder, x, need_input_grad is not False)

    def _logical_axes(self, rank):
        """The Keras axis of each logical axis (a channels_last image's are (0, 3, 1, 2))."""
        if rank == 4 and self.data_format == CHANNELS_LAST:
            return (0, 3, 1, 2)
        return tuple(range(rank))

    def _gather(self, builder, memory, dims, permutation, label, backward=False):
        """`memory` (logical `dims`, any layout) transposed by `permutation` (Keras axes)
        into a row-major buffer of its own: one reorder into a strided view of it."""
        if permutation == tuple(range(len(dims))):
            return self._plain(builder, memory, dims, label, backward)
        shape = permuted(keras_shape(dims, self.data_format), permutation)
        target = builder.allocate(self._rows(shape))
        copy(builder, memory, transposing_view(target, shape, permutation, dims,
                                               self._logical_axes(len(dims))), label, backward)
        return target

    def _scatter(self, builder, buffer, shape, permutation, label):
        """Row-major `buffer` of Keras `shape` (a gradient) transposed back by the inverse of
        `permutation`, as the logical tensor of the input it belongs to (backward)."""
        if permutation == tuple(range(len(shape))):
            return self._as_logical(builder, buffer, shape)
        back = inverse(permutation)
        target_shape = permuted(shape, back)
        target = builder.allocate(self._rows(target_shape))
        copy(builder, buffer, transposing_view(target, target_shape, back, shape,
                                               tuple(range(len(shape)))), label, backward=True)
        return self._as_logical(builder, target, target_shape)

    def _forward_pair(self, builder, tensors, need):
        rank = len(tensors[0].dims)
        pa, pb, pc = self._permutations(rank)
        reads = [permuted(keras_shape(t.dims, self.data_format), p)
                 for t, p in zip(tensors, (pa, pb), strict=True)]
        product_shape = self._product_shape(f"BatchedMatmul '{self.name}'", *reads)
        out_shape = permuted(product_shape, pc)
        a = self._gather(builder, tensors[0].memory, tensors[0].dims, pa, f"{self.name} input 0")
        b = self._gather(builder, tensors[1].memory, tensors[1].dims, pb, f"{self.name} input 1")
        b_read = b.view(self._transposed(reads[1])) if self.transpose_b else b
        product = builder.allocate(row_major(product_shape))  # f32 (from bf16 operands too)
        self._matmul(builder, a, b_read, product, f"{self.name} forward", False,
                     self._post_ops)
        if pc == tuple(range(rank)):
            out = product
        else:  # the result written out in the output's axis order
            out = builder.allocate(row_major(out_shape))
            copy(builder, product, transposing_view(out, out_shape, pc, product_shape,
                                                    tuple(range(rank))),
                 f"{self.name} output order")
        output = self._as_logical(builder, out, out_shape)

        def backward(output_grad):
            out_dims = logical_dims(out_shape, self.data_format)
            g = self._gather(builder, output_grad, out_dims, inverse(pc),
                             f"{self.name} gradient", True)
            grads = [None, None]
            if need[0]:  # dA = dC · Bᵀ
                b_t = b if self.transpose_b else b.view(self._transposed(reads[1]))
                grad = builder.allocate(self._rows(reads[0]))
                self._matmul(builder, g, b_t, grad, f"{self.name} backward 0", True,
                             self._post_ops)
                grads[0] = self._scatter(builder, grad, reads[0], pa,
                                         f"{self.name} backward 0 order")
            if need[1]:  # dB = Aᵀ · dC, or (dC)ᵀ · A when B is read transposed
                grad = builder.allocate(self._rows(reads[1]))
                if self.transpose_b:
                    src, weights = g.view(self._transposed(product_shape)), a
                else:
                    src, weights = a.view(self._transposed(reads[0])), g
                self._matmul(builder, src, weights, grad, f"{self.name} backward 1", True,
                             self._post_ops)
                grads[1] = self._scatter(builder, grad, reads[1], pb,
                                         f"{self.name} backward 1 order")
            return grads

        return Tensor(output, tensors[0].data_format, backward_reads_memory=False), backward

    def _ones(self, rows):
        """A (1, rows) row of ones in the operands' type: the plan's own bytes, never pooled."""
        ones = Memory(self._rows((1, rows)))
        if self.data_type == dnnl.bf16:
            ones.as_array(np.uint16)[:] = 0x3F80  # 1.0 in bfloat16
        else:
            ones.as_array()[:] = 1.0
        return ones

    def _forward_weight(self, builder, x, need_input_grad):
        shape = keras_shape(x.dims, self.data_format)
        k, n = self._kernel_matrix
        out_shape = self.output_keras_shape([shape])
        rows = int(np.prod(shape[:-self.contract]))
        a = self._plain(builder, x.memory, x.dims, f"{self.name} input")
        a2 = a.view(self._rows((rows, k)))
        w = builder.param(self.parameter_name, self._rows((k, n)))
        bias_name = None if self.bias is None else f"{self.name}/{self.bias}"
        bias_shape = self.weight[1][self.contract:]  # Keras's bias shape, bytes seen (1, N)
        bias = None if bias_name is None else builder.param(
            bias_name, row_major(bias_shape)).view(row_major((1, n)))
        # the product in the operands' type (bf16 under mixed_bfloat16, as Dense's inner
        # product and Keras's compute dtype): the bias is added in f32 before the rounding
        out = builder.allocate(self._rows(out_shape))
        self._matmul(builder, a2, w, out.view(self._rows((rows, n)))
                     if out_shape != (rows, n) else out, f"{self.name} forward", False,
                     bias=bias)
        output = self._as_logical(builder, out, out_shape)

        def backward(output_grad):
            out_dims = logical_dims(out_shape, self.data_format)
            g = self._plain(builder, output_grad, out_dims, f"{self.name} gradient", True)
            g2 = g.view(self._rows((rows, n)))
            if builder.wants_grad(self.parameter_name):  # dW = Xᵀ · dY
                grad_w = builder.param_grad(self.parameter_name, row_major((k, n)))
                self._matmul(builder, a2.view(self._transposed((rows, k))), g2, grad_w,
                             f"{self.name} backward weights", True)
            if bias_name is not None and builder.wants_grad(bias_name):  # db = 1ᵀ · dY
                grad_b = builder.param_grad(bias_name, row_major(bias_shape))
                self._matmul(builder, self._ones(rows), g2, grad_b.view(row_major((1, n))),
                             f"{self.name} backward bias", True)
            if not need_input_grad:
                return None
            grad = builder.allocate(self._rows(shape))  # dX = dY · Wᵀ
            self._matmul(builder, g2, w.view(self._transposed((k, n))),
                         grad.view(self._rows((rows, k))), f"{self.name} backward data", True)
            return self._as_logical(builder, grad, shape)

        return Tensor(output, x.data_format, backward_reads_memory=False), backward
