"""Normalization (the Keras preprocessing layer): y = (x - mean) / max(sqrt(variance), eps)
per feature of one axis (or, inverted, y = mean + x * max(sqrt(variance), eps)).

It runs as one oneDNN binary mul of the input by a per-feature scale, with the per-feature
shift added as a binary post-op, broadcast over the other axes in any layout; backward is
dy * scale with the same broadcasting mul. The scale and shift (one value per feature) are
recomputed each step from mean and variance by a tiny numba kernel, so weights assigned or
adapted between steps take effect.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from ..binding.post_ops import NONE, binary
from ..binding.primitive import post_op_arg
from .base import Op
from .numba_config import SERIAL, njit
from .softmax import logical_axis

EPSILON = 1e-7  # Keras's backend.epsilon()


@njit(**SERIAL)
def coefficients_kernel(mean, variance, scale, shift, epsilon, invert):
    for j in range(scale.size):
        std = max(np.sqrt(max(variance[j], np.float32(0.0))), epsilon)
        if invert:
            scale[j], shift[j] = std, mean[j]
        else:
            scale[j], shift[j] = np.float32(1.0) / std, -mean[j] / std


class NormalizationOp(Op):
    """Args: name, axis (a Keras axis, or None for one statistic), data_format, invert, and
    either `constants` (mean, variance) arrays of one value per feature, or None: the state
    weights
    "<name>/mean" and "<name>/variance" hold them."""

    def __init__(self, name, axis=-1, data_format="channels_last", invert=False,
                 constants=None):
        self.name, self.axis, self.data_format = name, axis, data_format
        self.invert, self.constants = bool(invert), constants

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def features(self, input_dims):
        """(logical axis, its length); (None, 1) for axis None: one mean and variance."""
        if self.axis is None:
            return None, 1
        axis = logical_axis(self.axis, len(input_dims), self.data_format,
                            f"Normalization '{self.name}'")
        return axis, input_dims[axis]

    @staticmethod
    def statistics_dims(features):
        """{weight: (logical dims, tag)} of the mean, variance and Keras's sample count."""
        return {"mean": ((features,), dnnl.a), "variance": ((features,), dnnl.a),
                "count": ((1,), dnnl.a)}

    def state_dims(self, input_dims):
        if self.constants is not None:
            return {}
        return self.statistics_dims(self.features(input_dims)[1])

    def forward(self, builder, x, need_input_grad=True):
        if x.flattened:
            raise ValueError(f"Normalization '{self.name}': an input flattened from 4D is not "
                             "supported; normalize before the Flatten layer")
        desc = x.memory.desc
        axis, features = self.features(x.dims)
        broadcast = tuple(features if i == axis else 1 for i in range(len(x.dims)))
        coefficient_desc = MemoryDesc.with_tag(broadcast, dnnl.f32)
        scale = builder.keep(builder.allocate(coefficient_desc))
        shift = builder.keep(builder.allocate(coefficient_desc))
        if self.constants is None:
            flat = MemoryDesc.with_tag((features,), dnnl.f32, dnnl.a)
            mean = builder.param(f"{self.name}/mean", flat)
            variance = builder.param(f"{self.name}/variance", flat)
        else:
            mean, variance = (np.ascontiguousarray(np.broadcast_to(
                np.asarray(v, np.float32).reshape(-1), (features,))) for v in self.constants)
        builder.add_forward(builder.memory_kernel(
            coefficients_kernel, (mean, variance, scale, shift, np.float32(EPSILON),
                                  self.invert), f"{self.name} coefficients"))
        shapes = f"Normalization '{self.name}' {desc}"

        def multiply(post_ops):
            return builder.primitive(*descriptor(
                "dnnl_binary_primitive_desc_create", "binary mul", shapes, dnnl.binary_mul,
                desc, coefficient_desc, desc, post_ops=post_ops))

        fwd = multiply(binary(dnnl.binary_add, coefficient_desc))
        output = builder.allocate(desc)
        builder.add_forward(builder.bind(fwd, {dnnl.ARG_SRC: x.memory, dnnl.ARG_SRC_1: scale,
                                               post_op_arg(0): shift, dnnl.ARG_DST: output},
                                         f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            input_grad = grad if builder.writable(grad) else builder.allocate(desc)
            builder.add_backward(builder.bind(multiply(NONE), {
                dnnl.ARG_SRC: grad, dnnl.ARG_SRC_1: scale, dnnl.ARG_DST: input_grad},
                f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward


