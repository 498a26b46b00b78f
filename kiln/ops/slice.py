"""SliceOp: the sub-block of a tensor at static offsets along its non-batch axes, the engine
behind keras.ops slicing (x[:, 1:3]), keras.ops.slice and keras.ops.split.

Forward: one oneDNN reorder from a sub-memory (the window of the input described by offsets,
read in place) into a buffer of the output's dims, in the input's format. A window oneDNN
cannot describe (an offset inside a channel block of nChw8c) is taken from the input reordered
to its plain layout first.

Backward: a buffer of the input's dims and bytes of its own, zeroed once when allocated; each
step one reorder writes the output gradient into its window, so the rest stays zero without a
pass over it (as Cropping2DOp, pad_crop.py). It is handed on as shared so that no consumer
writes into it in place. (pad_crop.copy keys its reorder primitives with the windows'
offsets: two windows of equal dims elsewhere are two primitives.)
"""

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .concatenate import submemory
from .pad_crop import copy, same_format, window
from .tensor import CHANNELS_LAST


class SliceOp(Op):
    """Args:
        name: the op's (layer's) name.
        starts: the logical offset of the window on each axis (the batch's is 0).
        sizes: the window's logical size on each axis (the batch's is None: all of it).
    """

    def __init__(self, name, starts, sizes):
        self.name = name
        self.starts = tuple(int(s) for s in starts)
        self.sizes = tuple(None if s is None else int(s) for s in sizes)
        if len(self.starts) != len(self.sizes) or self.starts[0] != 0 \
                or self.sizes[0] is not None:
            raise ValueError(f"Slice '{name}': arguments starts and sizes must have one entry "
                             f"per axis, the batch's 0 and None, got {starts!r} and {sizes!r}")

    def output_dims(self, input_dims):
        dims = tuple(input_dims)
        if len(dims) != len(self.starts):
            raise ValueError(f"Slice '{self.name}': a window of rank {len(self.starts)} on an "
                             f"input of dims {dims}")
        for axis in range(1, len(dims)):
            start, size = self.starts[axis], self.sizes[axis]
            if start < 0 or size < 1 or start + size > dims[axis]:
                raise ValueError(f"Slice '{self.name}': the window [{start}, {start + size}) of "
                                 f"axis {axis} is not inside the input's dims {dims}")
        return (dims[0], *self.sizes[1:])

    def forward(self, builder, x, need_input_grad=True):
        out_dims = self.output_dims(x.dims)
        source = x.memory
        offsets = self.starts
        if submemory(source.desc, out_dims, offsets) is None:
            # the row-major layout in Keras's order, in the input's data type (bf16 too)
            tag = dnnl.acdb if len(x.dims) == 4 and x.data_format == CHANNELS_LAST else None
            plain = MemoryDesc.with_tag(x.dims, source.desc.data_type, tag)
            source = builder.reorder(source, plain, f"{self.name} input to plain layout")
        if len(out_dims) == 4:
            desc = same_format(source.desc, out_dims)
        else:
            desc = MemoryDesc.with_tag(out_dims, source.desc.data_type)
        output = builder.allocate(desc)
        who = f"Slice '{self.name}'"
        copy(builder, window(source, out_dims, offsets, who), output, f"{self.name} forward")

        def backward(output_grad):
            if not need_input_grad:
                return None
            # bytes of its own, zero outside the window, that no consumer may overwrite
            input_grad = builder.keep(builder.allocate(source.desc))
            builder.share(input_grad)
            copy(builder, output_grad, window(input_grad, out_dims, offsets, who),
                 f"{self.name} backward", backward=True)
            return input_grad

        return x.with_memory(output), backward

