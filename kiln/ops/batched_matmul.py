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

Operands are read in plain Keras row-major order (a 4D channels_last tensor's logical dims
are (N, C, H, W) in nhwc, so its bytes already are). Backward is two matmuls,
dA = dC · Bᵀ and dB = Aᵀ · dC, the transposes being strided views of the same bytes
(oneDNN matmul reads arbitrary strides), never copies.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from .base import Op
from .merge import needed
from .reshape import copy_in_layout, keras_layout
from .tensor import CHANNELS_LAST, Tensor, keras_shape, logical_dims


def row_major(shape):
    return MemoryDesc.with_tag(tuple(shape), dnnl.f32)


def transposed(shape):
    """Bytes of row-major `shape` (..., R, C) seen as (..., C, R): strides, no copy."""
    *batch, rows, cols = shape
    strides = [0] * len(batch)
    step = rows * cols
    for i in range(len(batch) - 1, -1, -1):
        strides[i] = step
        step *= batch[i]
    return MemoryDesc.with_strides((*batch, cols, rows), (*strides, 1, cols))


class BatchedMatmulOp(Op):
    """Args:
        name: the op's (layer's) name.
        data_format: how Keras sees the inputs' 4D logical dims (their last Keras axis).
        transpose_b: two inputs only: B is (..., N, K) and read transposed.
        weight: None (two inputs), or (short name, kernel shape): x times the parameter
            "<name>/<short name>", Keras's row-major layout ((K, N) for a plain matmul).
        contract: with a weight, how many trailing axes of x (leading axes of the kernel)
            the product sums over; the kernel's other axes end the output's shape.
    """

    def __init__(self, name, data_format=CHANNELS_LAST, transpose_b=False, weight=None,
                 contract=1):
        if weight is not None and transpose_b:
            raise ValueError(f"BatchedMatmul '{name}': transpose_b applies to two inputs only")
        self.name, self.data_format, self.transpose_b = name, data_format, transpose_b
        self.weight = None if weight is None else (str(weight[0]),
                                                   tuple(int(d) for d in weight[1]))
        self.arity = None if weight is None else 1
        self.contract = int(contract)
        if weight is not None and not 1 <= self.contract < len(self.weight[1]):
            raise ValueError(f"BatchedMatmul '{name}': contract={contract} must leave at "
                             f"least one output axis of the kernel {self.weight[1]}")

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
        return {self.weight[0]: (self._kernel_matrix, dnnl.ab)}

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
        a, b = shapes
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
        """`memory` (logical `dims`, any layout) as Keras row-major bytes in a buffer that
        keeps them (views of it stay valid: a plan input's buffer is swapped per step, and
        liveness sharing may move a pooled one): a copy in forward, the gradient itself in
        backward when already plain."""
        shape = keras_shape(dims, self.data_format)
        desc = (row_major(shape) if tuple(shape) == tuple(dims)
                else keras_layout(dims, self.data_format, False, dnnl.f32))
        if backward:
            plain = builder.keep(builder.reorder(memory, desc, label, backward=True))
        else:
            plain = copy_in_layout(builder, memory, desc, label)
        return plain.view(row_major(shape))

    def _as_logical(self, builder, memory, shape):
        """A row-major buffer of Keras `shape` seen with the logical dims ops expect."""
        dims = logical_dims(shape, self.data_format)
        if tuple(dims) == tuple(shape):
            return memory
        return builder.keep(memory).view(keras_layout(dims, self.data_format, False,
                                                      dnnl.f32))

    def _matmul(self, builder, src, weights, dst, label, backward):
        primitive = builder.primitive(*descriptor(
            "dnnl_matmul_primitive_desc_create", "matmul",
            f"{label} {src.desc.dims} x {weights.desc.dims}", src.desc, weights.desc, None,
            dst.desc))
        call = builder.bind(primitive, {dnnl.ARG_SRC: src, dnnl.ARG_WEIGHTS: weights,
                                        dnnl.ARG_DST: dst}, label)
        (builder.add_backward if backward else builder.add_forward)(call)

    def forward(self, builder, x, need_input_grad=None):
        tensors = list(x) if self.weight is None else [x]
        for tensor in tensors:
            if tensor.memory.desc.data_type != dnnl.f32:
                raise NotImplementedError(f"BatchedMatmul '{self.name}': runs in float32 "
                                          "only; use the 'float32' dtype policy for this layer")
        if self.weight is None:
            return self._forward_pair(builder, tensors, needed(need_input_grad, 2))
        return self._forward_weight(builder, x, need_input_grad is not False)

    def _forward_pair(self, builder, tensors, need):
        shapes = [keras_shape(t.dims, self.data_format) for t in tensors]
        out_shape = self.output_keras_shape(shapes)
        a = self._plain(builder, tensors[0].memory, tensors[0].dims, f"{self.name} input 0")
        b = self._plain(builder, tensors[1].memory, tensors[1].dims, f"{self.name} input 1")
        b_read = b.view(transposed(shapes[1])) if self.transpose_b else b
        out = builder.allocate(row_major(out_shape))
        self._matmul(builder, a, b_read, out, f"{self.name} forward", False)
        output = self._as_logical(builder, out, out_shape)

        def backward(output_grad):
            out_dims = logical_dims(out_shape, self.data_format)
            g = self._plain(builder, output_grad, out_dims, f"{self.name} gradient", True)
            grads = [None, None]
            if need[0]:  # dA = dC · Bᵀ
                b_t = b if self.transpose_b else b.view(transposed(shapes[1]))
                grads[0] = builder.allocate(row_major(shapes[0]))
                self._matmul(builder, g, b_t, grads[0], f"{self.name} backward 0", True)
            if need[1]:  # dB = Aᵀ · dC, or (dC)ᵀ · A when B is read transposed
                grads[1] = builder.allocate(row_major(shapes[1]))
                if self.transpose_b:
                    src, weights = g.view(transposed(out_shape)), a
                else:
                    src, weights = a.view(transposed(shapes[0])), g
                self._matmul(builder, src, weights, grads[1], f"{self.name} backward 1", True)
            return [None if grad is None else self._as_logical(builder, grad, shape)
                    for grad, shape in zip(grads, shapes, strict=True)]

        return Tensor(output, tensors[0].data_format, backward_reads_memory=False), backward

    def _forward_weight(self, builder, x, need_input_grad):
        shape = keras_shape(x.dims, self.data_format)
        k, n = self._kernel_matrix
        out_shape = self.output_keras_shape([shape])
        rows = int(np.prod(shape[:-self.contract]))
        a = self._plain(builder, x.memory, x.dims, f"{self.name} input")
        a2 = a.view(row_major((rows, k)))
        w = builder.param(self.parameter_name, row_major((k, n)))
        out = builder.keep(builder.allocate(row_major(out_shape)))
        self._matmul(builder, a2, w, out.view(row_major((rows, n))) if out_shape != (rows, n)
                     else out, f"{self.name} forward", False)
        output = self._as_logical(builder, out, out_shape)

        def backward(output_grad):
            out_dims = logical_dims(out_shape, self.data_format)
            g = self._plain(builder, output_grad, out_dims, f"{self.name} gradient", True)
            g2 = g.view(row_major((rows, n)))
            if builder.wants_grad(self.parameter_name):  # dW = Xᵀ · dY
                grad_w = builder.param_grad(self.parameter_name, row_major((k, n)))
                self._matmul(builder, a2.view(transposed((rows, k))), g2, grad_w,
                             f"{self.name} backward weights", True)
            if not need_input_grad:
                return None
            grad = builder.keep(builder.allocate(row_major(shape)))  # dX = dY · Wᵀ
            self._matmul(builder, g2, w.view(transposed((k, n))),
                         grad.view(row_major((rows, k))), f"{self.name} backward data", True)
            return self._as_logical(builder, grad, shape)

        return Tensor(output, x.data_format, backward_reads_memory=False), backward
