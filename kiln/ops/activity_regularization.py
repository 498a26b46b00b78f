"""Activity regularization: a penalty on a layer's output, added to the loss.

Keras adds `(l1 * sum|a| + l2 * sum a^2) / batch_size` for the output `a` of a layer with an
`activity_regularizer` (and of an `ActivityRegularization` layer). Forward is free (the output
is the input's memory) apart from one parallel pass that sums the penalty into a loss term of
the plan; backward adds `(l1 * sign(a) + 2 * l2 * a) / batch_size` to the output gradient, in
place when the plan allows. Both passes run over the raw buffer in whatever layout oneDNN chose:
padding inside blocked layouts holds zeros, which add nothing and get nothing.
"""

import numpy as np

from ..binding import constants as dnnl
from .base import Op
from .numba_config import PARALLEL, njit, prange


@njit(**PARALLEL)
def activity_penalty_kernel(a, l1, l2, scale, out):
    total = 0.0
    for i in prange(a.size):
        total += l1 * abs(a[i]) + l2 * a[i] * a[i]
    out[0] = total * scale


@njit(**PARALLEL)
def activity_gradient_kernel(a, grad, out, l1, l2, scale):
    two_l2 = 2.0 * l2
    for i in prange(a.size):
        out[i] = grad[i] + scale * (l1 * np.sign(a[i]) + two_l2 * a[i])


class ActivityRegularizationOp(Op):
    """Args: name (for messages and labels), l1, l2 (the penalty's coefficients)."""

    def __init__(self, name, l1=0.0, l2=0.0):
        self.name = name
        self.l1, self.l2 = float(l1), float(l2)

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        if x.memory.desc.data_type != dnnl.f32:
            raise ValueError(f"activity regularizer '{self.name}': bfloat16 activations are not "
                             "supported yet (use the float32 policy)")
        scale = np.float32(1.0 / x.dims[0])  # Keras divides by the batch size
        l1, l2 = np.float32(self.l1), np.float32(self.l2)
        values = x.memory.as_array()
        builder.add_forward(builder.kernel(
            activity_penalty_kernel, (values, l1, l2, scale, builder.loss_term()),
            f"{self.name} penalty"))
        # no activation on the view: a consumer must not apply the producer's derivative
        output = x.with_memory(x.memory)

        def backward(output_grad):
            grad = builder.reorder(output_grad, x.memory.desc,
                                   f"{self.name} gradient to layout", backward=True)
            writable = grad is not output_grad or builder.writable(output_grad)
            target = grad if writable else builder.allocate(grad.desc)
            builder.add_backward(builder.kernel(
                activity_gradient_kernel,
                (values, grad.as_array(), target.as_array(), l1, l2, scale),
                f"{self.name} penalty backward"))
            return target

        return output, backward
