"""ImageAugmentOp: what the random augmentation ops (flip, grayscale, color, affine, mix) share.

Each is the identity in an inference plan. In a training plan it reads the images in NHWC (a
channels_first input is reordered once), runs its draw kernels at the start of the step, then
one parallel forward kernel into a new NHWC buffer; the backward reorders the gradient to NHWC
and runs one parallel kernel that reads the same step's draws. A subclass says only what
differs: its draws and its two kernels with their arguments.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .image_random import check_image_input


class ImageAugmentOp(Op):
    """Subclasses set `layer_name` (Keras's class name, for messages) and define plan_draws,
    forward_kernel and backward_kernel."""

    layer_name = None

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def check_input(self, x, who):
        check_image_input(x, who)

    def plan_draws(self, builder, shape):
        """Add the step's draw kernels and (re)allocate the arrays they fill;
        shape = int64 [n, h, w, c]."""
        raise NotImplementedError

    def forward_kernel(self, source, output, shape):
        """(kernel, args) writing the augmented NHWC images into `output`."""
        raise NotImplementedError

    def backward_kernel(self, source, grad, input_grad, shape):
        """(kernel, args) writing the NHWC input gradient into `input_grad`."""
        raise NotImplementedError

    def forward(self, builder, x, need_input_grad=True):
        if not builder.training:
            return x, lambda output_grad: output_grad
        self.check_input(x, f"{self.layer_name} '{self.name}'")
        n, c, h, w = x.dims
        nhwc = MemoryDesc.with_tag(x.dims, dnnl.f32, dnnl.acdb)
        source = builder.reorder(x.memory, nhwc, f"{self.name} input to nhwc")
        shape = np.array([n, h, w, c], np.int64)
        self.plan_draws(builder, shape)
        output = builder.allocate(nhwc)
        kernel, args = self.forward_kernel(source, output, shape)
        builder.add_forward(builder.memory_kernel(kernel, args, f"{self.name} forward"))

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, nhwc, f"{self.name} gradient to nhwc",
                                   backward=True)
            input_grad = builder.allocate(nhwc)
            kernel, args = self.backward_kernel(source, grad, input_grad, shape)
            builder.add_backward(builder.memory_kernel(kernel, args, f"{self.name} backward"))
            return input_grad

        return x.with_memory(output), backward
