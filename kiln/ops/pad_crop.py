"""ZeroPadding2DOp and Cropping2DOp as oneDNN reorders into / out of a sub-memory (a window of a
larger tensor described by offsets), in the input's layout, blocked or not.

Padding: the output buffer keeps bytes of its own, zeroed once when allocated; each step only
the interior window is written (a reorder of the input into it), so the border stays zero
without a pass over it. Backward reads the interior window of the output gradient.
Cropping: the forward reads the window; backward writes the gradient into the window of a
buffer of its own whose border stays zero, handed on as shared so that no consumer writes
into it in place.
"""

import ctypes

from ..binding import constants as dnnl
from ..binding.descriptor import reorder_descriptor
from ..binding.errors import check
from ..binding.library import lib
from ..binding.memory import Memory, MemoryDesc
from .base import Op
from .concatenate import submemory

SUBMEMORY_OFFSET = 259  # dnnl_query_submemory_offset_s64

# formats an input may come in; an output of other dims is made in the same one
_TAGS = (dnnl.acdb, dnnl.abcd, dnnl.aBcd16b, dnnl.aBcd8b, dnnl.aBcd4b)


def same_format(desc, dims):
    """A descriptor of `dims` in desc's format (nhwc when desc's is none of _TAGS)."""
    for tag in _TAGS:
        if MemoryDesc.with_tag(desc.dims, desc.data_type, tag) == desc:
            return MemoryDesc.with_tag(dims, desc.data_type, tag)
    return MemoryDesc.with_tag(dims, desc.data_type, dnnl.acdb)


def window_offset(desc):
    """The element offset of a window's descriptor in its buffer (0 for a whole buffer)."""
    value = ctypes.c_int64()
    check(lib.dnnl_memory_desc_query(desc.handle, SUBMEMORY_OFFSET, ctypes.byref(value)),
          "md submemory offset")
    return value.value


def copy(builder, source, target, label, backward=False):
    """Add a reorder source -> target (either may be a window of a larger buffer; the key
    holds the windows' offsets: two crops of equal size are two primitives)."""
    primitive = builder.primitive(*reorder_descriptor(source.desc, target.desc))
    call = builder.bind(primitive, {dnnl.ARG_FROM: source, dnnl.ARG_TO: target}, label)
    (builder.add_backward if backward else builder.add_forward)(call)


def window(memory, dims, offsets, who):
    desc = submemory(memory.desc, dims, offsets)
    if desc is None:
        raise ValueError(f"{who}: oneDNN cannot describe the window {list(dims)} at "
                         f"{list(offsets)} of {memory.desc}")
    return Memory(desc, memory.storage)


class _SpatialWindowOp(Op):
    """Args: name, ((top, bottom), (left, right)) rows / columns to add or remove."""

    kind = None

    def __init__(self, name, amounts):
        self.name = name
        (self.top, self.bottom), (self.left, self.right) = amounts

    @property
    def who(self):
        return f"{self.kind} '{self.name}'"

    def _check(self, x):
        if len(x.dims) != 4 or x.flattened:
            raise ValueError(f"{self.who}: expected a 4D input, got shape {x.keras_shape}")


class ZeroPadding2DOp(_SpatialWindowOp):
    kind = "ZeroPadding2D"

    def output_dims(self, input_dims):
        n, c, h, w = input_dims
        return (n, c, h + self.top + self.bottom, w + self.left + self.right)

    def forward(self, builder, x, need_input_grad=True):
        self._check(x)
        n, c, h, w = x.dims
        desc = same_format(x.memory.desc, self.output_dims(x.dims))
        output = builder.keep(builder.allocate(desc))  # zeroed once; only the window is written
        interior = (n, c, h, w), (0, 0, self.top, self.left)
        copy(builder, x.memory, window(output, *interior, self.who), f"{self.name} forward")

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient to layout",
                                   backward=True)
            input_grad = builder.allocate(x.memory.desc)
            copy(builder, window(grad, *interior, self.who), input_grad,
                 f"{self.name} backward", backward=True)
            return input_grad

        return x.with_memory(output), backward


class Cropping2DOp(_SpatialWindowOp):
    kind = "Cropping2D"

    def output_dims(self, input_dims):
        n, c, h, w = input_dims
        out_h, out_w = h - self.top - self.bottom, w - self.left - self.right
        if out_h <= 0 or out_w <= 0:
            amounts = ((self.top, self.bottom), (self.left, self.right))
            raise ValueError(f"{self.who}: argument cropping {amounts} leaves nothing of an "
                             f"input of height x width {h}x{w}")
        return (n, c, out_h, out_w)

    def forward(self, builder, x, need_input_grad=True):
        self._check(x)
        out_dims = self.output_dims(x.dims)
        crop = out_dims, (0, 0, self.top, self.left)
        output = builder.allocate(same_format(x.memory.desc, out_dims))
        copy(builder, window(x.memory, *crop, self.who), output, f"{self.name} forward")

        def backward(output_grad):
            if not need_input_grad:
                return None
            # bytes of its own, zero outside the window, that no consumer may overwrite
            input_grad = builder.keep(builder.allocate(x.memory.desc))
            builder.share(input_grad)
            copy(builder, output_grad, window(input_grad, *crop, self.who),
                 f"{self.name} backward", backward=True)
            return input_grad

        return x.with_memory(output), backward
