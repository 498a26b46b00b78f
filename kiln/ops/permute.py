"""PermuteOp: reorders the axes (after the batch) of the Keras view of a tensor, as one oneDNN
reorder into a descriptor with permuted strides over the output buffer; backward is the
reverse reorder.
"""

import ctypes

from ..binding.errors import check
from ..binding.library import lib
from ..binding.memory import Memory, MemoryDesc, to_dims
from .base import Op
from .pad_crop import copy
from .reshape import keras_layout
from .tensor import CHANNELS_LAST, keras_shape, logical_dims


def strided(dims, strides, data_type):
    out = ctypes.c_void_p()
    check(lib.dnnl_memory_desc_create_with_strides(ctypes.byref(out), len(dims), to_dims(dims),
                                                   data_type, to_dims(strides)),
          "memory descriptor", f"dims {list(dims)} strides {list(strides)}")
    return MemoryDesc(out)


class PermuteOp(Op):
    """Args: name, dims (Keras's: a permutation of 1..rank-1), the input's data_format."""

    def __init__(self, name, dims, data_format=CHANNELS_LAST):
        self.name, self.dims, self.data_format = name, tuple(dims), data_format

    def _keras_axes(self, rank):
        """Keras axis of each logical axis."""
        if rank == 4 and self.data_format == CHANNELS_LAST:
            return (0, 3, 1, 2)
        return tuple(range(rank))

    def output_dims(self, input_dims):
        shape = keras_shape(input_dims, self.data_format)
        if sorted(self.dims) != list(range(1, len(shape))):
            raise ValueError(f"Permute '{self.name}': argument dims must be a permutation of "
                             f"{list(range(1, len(shape)))} for an input of shape "
                             f"{tuple(shape)}, got {self.dims}")
        return logical_dims((shape[0], *(shape[d] for d in self.dims)), self.data_format)

    def forward(self, builder, x, need_input_grad=True):
        if x.flattened:
            raise ValueError(f"Permute '{self.name}': an input flattened from 4D is not "
                             "supported; permute before the Flatten layer")
        data_type = x.memory.desc.data_type
        out_dims = self.output_dims(x.dims)
        out_desc = keras_layout(out_dims, x.data_format, False, data_type)
        # row-major strides of the output's Keras shape, then those of each input Keras axis
        shape = keras_shape(out_dims, x.data_format)
        out_strides = [1] * len(shape)
        for axis in range(len(shape) - 2, -1, -1):
            out_strides[axis] = out_strides[axis + 1] * shape[axis + 1]
        position = {0: 0, **{axis: j + 1 for j, axis in enumerate(self.dims)}}
        view_desc = strided(x.dims, [out_strides[position[k]]
                                     for k in self._keras_axes(len(x.dims))], data_type)
        output = builder.allocate(out_desc)
        copy(builder, x.memory, Memory(view_desc, output.storage), f"{self.name} forward")

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, out_desc, f"{self.name} gradient to layout",
                                   backward=True)
            input_grad = builder.allocate(keras_layout(x.dims, x.data_format, False, data_type))
            copy(builder, Memory(view_desc, grad.storage), input_grad, f"{self.name} backward",
                 backward=True)
            return input_grad

        return x.with_memory(output), backward
