"""AxisReductionOp: the sum, mean, max or min over some non-batch logical axes, kept as size 1
(keras.ops sum / mean / max / min with keepdims; the front end reshapes when Keras drops the
axes).

Forward is one oneDNN reduction from the input's layout into the plain Keras-order layout of
the small result. Backward broadcasts the small gradient back over the reduced axes as oneDNN
binary ops in the input's layout: for sum and mean, one add onto a zero buffer (the 1 / count
of the mean fused as an eltwise linear post-op); for max and min, the positions equal to the
result (a binary eq against it) times the gradient, so tied values each get the whole
gradient (JAX splits it between them; ties have probability zero for real-valued data).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.post_ops import NONE, eltwise
from .base import Op
from .reshape import keras_layout

# oneDNN 3.x's dnnl_alg_kind_t values not in binding/constants.py
REDUCTION_MIN, BINARY_EQ = 196595, 131066
ALGORITHMS = {"sum": dnnl.reduction_sum, "mean": dnnl.reduction_mean,
              "max": dnnl.reduction_max, "min": REDUCTION_MIN}


class AxisReductionOp(Op):
    """Args: name, mode ('sum', 'mean', 'max' or 'min'), axes (logical axes, not 0 the
    batch), over_batch (a loss reduced over the whole batch: every axis, 0 included, to one
    value of dims (1, ..., 1); only a loss head plans it, never a model's layers, whose
    plans may run in sub-batches)."""

    def __init__(self, name, mode, axes, over_batch=False):
        if mode not in ALGORITHMS:
            raise ValueError(f"AxisReduction '{name}': argument mode must be one of "
                             f"{sorted(ALGORITHMS)}, got {mode!r}")
        self.name, self.mode, self.axes = name, mode, tuple(sorted(set(axes)))
        self.over_batch = bool(over_batch)
        if self.over_batch and 0 not in self.axes:
            self.axes = (0, *self.axes)
        if not self.axes or (0 in self.axes and not self.over_batch):
            raise ValueError(f"AxisReduction '{name}': argument axes must be non-batch axes, "
                             f"got {axes!r}")

    def output_dims(self, input_dims):
        if max(self.axes) >= len(input_dims):
            raise ValueError(f"AxisReduction '{self.name}': axes {self.axes} out of range "
                             f"for dims {tuple(input_dims)}")
        if self.over_batch and len(self.axes) != len(input_dims):
            raise ValueError(f"AxisReduction '{self.name}': a reduction over the batch "
                             f"covers every axis of dims {tuple(input_dims)}, got axes "
                             f"{self.axes}")
        return tuple(1 if axis in self.axes else d for axis, d in enumerate(input_dims))

    def forward(self, builder, x, need_input_grad=True):
        if x.flattened:
            raise ValueError(f"AxisReduction '{self.name}': an input flattened from 4D is "
                             "not supported")
        source = x.memory
        desc = source.desc
        out_dims = self.output_dims(x.dims)
        small = keras_layout(out_dims, x.data_format, False, desc.data_type)
        if tuple(out_dims) == tuple(x.dims):  # every reduced axis has size 1: the identity
            return self._identity(builder, x, small, need_input_grad)
        alg = ALGORITHMS[self.mode]
        shapes = f"{self.mode} '{self.name}' {desc} -> {list(out_dims)}"
        fwd = builder.primitive(*descriptor("dnnl_reduction_primitive_desc_create", "reduction",
                                            shapes, alg, desc, small, 0.0, 0.0))
        output = builder.allocate(small)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: source, dnnl.ARG_DST: output},
                                         f"{self.name} {self.mode}"))
        count = int(np.prod([x.dims[axis] for axis in self.axes]))
        scale = 1.0 / count if self.mode == "mean" else 1.0

        def broadcast(alg, full, part, post, label):
            """A new buffer of the input's layout: full (alg) part-broadcast, then post."""
            primitive = builder.primitive(*descriptor(
                "dnnl_binary_primitive_desc_create", "binary", f"{shapes} {label}", alg, desc,
                small, desc, post_ops=post))
            target = builder.allocate(desc)
            builder.add_backward(builder.bind(primitive, {
                dnnl.ARG_SRC: full, dnnl.ARG_SRC_1: part, dnnl.ARG_DST: target},
                f"{self.name} {self.mode} {label}"))
            return target

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, small, f"{self.name} gradient to layout",
                                   backward=True)
            if self.mode in ("max", "min"):
                chosen = broadcast(BINARY_EQ, source, output, NONE, "backward positions")
                return broadcast(dnnl.binary_mul, chosen, grad, NONE, "backward")
            zeros = builder.keep(builder.allocate(desc))  # stays zero: nothing else writes it
            zeros.storage[:] = 0
            return broadcast(dnnl.binary_add, zeros, grad,
                             eltwise(dnnl.eltwise_linear, scale), "backward")

        return x.with_memory(output), backward

    def _identity(self, builder, x, small, need_input_grad):
        """A reduction over axes of size 1 (a mean over one channel), which oneDNN refuses
        (its source and destination would have the same dims): the values in Keras order,
        and the gradient as it comes."""
        output = builder.reorder(x.memory, small, f"{self.name} {self.mode} of one value")

        def backward(output_grad):
            if not need_input_grad:
                return None
            return builder.reorder(output_grad, x.memory.desc,
                                   f"{self.name} gradient to layout", backward=True)

        return x.with_memory(output), backward
