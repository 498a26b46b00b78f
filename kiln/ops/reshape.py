"""ReshapeOp: the Keras view of a tensor takes another shape; the values keep Keras's row-major
order (channels_last order for images in channels_last, channels_first order otherwise).

The input is reordered once into its plain Keras layout (a copy: a view of a plan input would
not follow the input buffer the plan swaps in), and the output is that buffer seen with the new
dims; the gradient comes back the same way. Liveness moves those buffers together with their
views.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import reorder_descriptor
from ..binding.memory import Memory, MemoryDesc
from .base import Op
from .concatenate import plain_tag
from .tensor import CHANNELS_LAST, keras_shape, logical_dims


def keras_layout(dims, data_format, flattened, data_type):
    """The plain descriptor whose bytes are the tensor in Keras's row-major order."""
    if len(dims) == 4:
        tag = dnnl.acdb if data_format == CHANNELS_LAST or flattened else dnnl.abcd
        return MemoryDesc.with_tag(dims, data_type, tag)
    return MemoryDesc.with_tag(dims, data_type, plain_tag(len(dims), data_format))


def copy_in_layout(builder, memory, desc, label):
    """`memory` reordered into `desc`, always into a new buffer of its own."""
    target = builder.allocate(desc)
    primitive = builder.primitive(*reorder_descriptor(memory.desc, desc))
    builder.add_forward(builder.bind(primitive, {dnnl.ARG_FROM: memory, dnnl.ARG_TO: target},
                                     label))
    return target


def resolve_target(target_shape, size, context):
    """Keras's target shape (one entry may be -1) for `size` values per sample."""
    target = [int(d) for d in target_shape]
    unknown = [i for i, d in enumerate(target) if d == -1]
    known = int(np.prod([d for d in target if d != -1]))
    if unknown:
        if len(unknown) > 1 or known == 0 or size % known:
            raise ValueError(f"{context}: argument target_shape {tuple(target_shape)} cannot "
                             f"hold {size} values per sample")
        target[unknown[0]] = size // known
    if int(np.prod(target)) != size:
        raise ValueError(f"{context}: argument target_shape {tuple(target_shape)} does not hold "
                         f"{size} values per sample")
    return tuple(target)


class ReshapeOp(Op):
    """Args: name, target_shape (Keras shape without the batch, one -1 allowed), the input's
    data_format and whether Keras sees it flattened."""

    def __init__(self, name, target_shape, data_format=CHANNELS_LAST, flattened=False):
        self.name, self.target_shape = name, tuple(target_shape)
        self.data_format, self.flattened = data_format, flattened

    def output_dims(self, input_dims):
        shape = keras_shape(input_dims, self.data_format, self.flattened)
        target = resolve_target(self.target_shape, int(np.prod(shape[1:])),
                                f"Reshape '{self.name}'")
        if len(target) + 1 not in (2, 3, 4):
            raise ValueError(f"Reshape '{self.name}': argument target_shape must have 1 to 3 "
                             f"entries, got {self.target_shape}")
        return logical_dims((input_dims[0], *target), self.data_format)

    def forward(self, builder, x, need_input_grad=True):
        data_type = x.memory.desc.data_type
        source_desc = keras_layout(x.dims, x.data_format, x.flattened, data_type)
        out_dims = self.output_dims(x.dims)
        out_desc = keras_layout(out_dims, x.data_format, False, data_type)
        plain = copy_in_layout(builder, x.memory, source_desc, f"{self.name} to Keras order")
        output = Memory(out_desc, plain.storage)

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, out_desc, f"{self.name} gradient to layout",
                                   backward=True)
            input_grad = Memory(source_desc, grad.storage)
            if not builder.writable(grad):
                builder.share(input_grad)  # the same bytes are another consumer's too
            return input_grad

        result = x.with_memory(output)
        result.flattened = False
        return result, backward
