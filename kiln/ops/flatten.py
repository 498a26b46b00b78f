"""FlattenOp: free. The 4D memory stays in its layout; only the Keras view becomes
(N, features). A following DenseOp reads it in Keras's (H, W, C) feature order (ops/dense.py):
in f32 the 4D memory directly with 4D weights whose tag encodes that order, in bf16 the (N,
H*W*C) view of its nhwc bytes (free when the memory is nhwc, one reorder otherwise)."""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import reorder_descriptor
from ..binding.memory import Memory, MemoryDesc
from .base import Op
from .tensor import Tensor


class FlattenOp(Op):
    def __init__(self, name):
        self.name = name

    def output_dims(self, input_dims):
        return tuple(input_dims)  # logical dims are unchanged; the Keras shape is (N, prod)

    def parameter_dims(self, input_dims):
        return {}

    def forward(self, builder, x, need_input_grad=True):
        out = x.with_memory(x.memory)
        if len(x.dims) > 2:
            out.flattened = True
        return out, lambda output_grad: output_grad


class FlattenToMatrixOp(Op):
    """A flattened 4D tensor as a real (N, features) matrix, features in Keras' (H, W, C)
    order: for ops that normalize or mix each feature on its own (BatchNormalization after
    Flatten), where the free 4D view would leave them channels. One reorder to nhwc, which is
    that matrix byte for byte; backward hands the (N, features) gradient back as the same bytes
    viewed as nhwc, so the producer reorders it like any gradient."""

    def __init__(self, name):
        self.name = name

    def output_dims(self, input_dims):
        n, *rest = input_dims
        return (n, int(np.prod(rest)))

    def forward(self, builder, x, need_input_grad=True):
        n, c, h, w = x.dims
        data_type = x.memory.desc.data_type
        nhwc = MemoryDesc.with_tag((n, c, h, w), data_type, dnnl.acdb)
        image_order = builder.reorder(x.memory, nhwc, f"{self.name} to (h, w, c) order")
        if image_order is x.memory:
            # already in that order: copy anyway, since a view of a plan input would not
            # follow the input buffer that use_input() points elsewhere
            image_order = builder.allocate(nhwc)
            copy = builder.primitive(*reorder_descriptor(nhwc, nhwc))
            builder.add_forward(builder.bind(copy, {dnnl.ARG_FROM: x.memory,
                                                    dnnl.ARG_TO: image_order},
                                             f"{self.name} copy"))
        matrix = Memory(MemoryDesc.with_tag((n, c * h * w), data_type, dnnl.ab),
                        image_order.storage)

        def backward(output_grad):
            plain = builder.reorder(output_grad, matrix.desc, f"{self.name} gradient to layout",
                                    backward=True)
            return Memory(nhwc, plain.storage)

        return Tensor(matrix, x.data_format), backward
