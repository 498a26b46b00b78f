"""ConcatenateOp: the engine behind Keras' Concatenate layer, along one logical axis.

Forward is one oneDNN `concat` over the inputs as they come: the destination is `format_tag
any`, so oneDNN picks the layout (the inputs' common layout when they share one and the
axis allows it, e.g. nChw16c for channel counts that are multiples of 16; a plain layout
otherwise) and copies each input into its region.

Backward: each input's gradient is a region of the output gradient. It is read through a
sub-memory descriptor (oneDNN's own view of a region: the parent's strides, an offset) and
reordered into the input's layout in one pass. When the output gradient's layout cannot
describe a region (a blocked layout cut inside a block) it is first reordered into a plain one.
"""

import ctypes

from ..binding import constants as dnnl
from ..binding.descriptor import concat_descriptor, reorder_descriptor
from ..binding.library import lib
from ..binding.memory import Memory, MemoryDesc, to_dims
from .base import Op
from .merge import check_count, check_dims, check_tensors, needed
from .tensor import CHANNELS_LAST, Tensor

AXIS_NAMES = {2: ("batch", "features"), 4: ("batch", "channels", "height", "width")}


def submemory(parent, dims, offsets):
    """oneDNN's descriptor of the region `dims` at `offsets` of `parent`, or None when the
    layout cannot describe it (an offset inside a block)."""
    out = ctypes.c_void_p()
    status = lib.dnnl_memory_desc_create_submemory(ctypes.byref(out), parent.handle,
                                                   to_dims(dims), to_dims(offsets))
    return MemoryDesc(out) if status == dnnl.success else None


def plain_tag(ndims, data_format):
    if ndims == 4:
        return dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
    return {1: dnnl.a, 2: dnnl.ab, 3: dnnl.abc, 5: dnnl.abcde}[ndims]


class ConcatenateOp(Op):
    """Args: name; axis: the logical axis (1 = channels of (N, C, H, W), features of (N, F);
    negative counts from the end). Inputs must agree on every other axis."""

    arity = None
    per_image = False  # several inputs: the sub-batch front is a chain of one-input ops
    layer = "Concatenate"
    min_inputs, max_inputs = 2, None

    def __init__(self, name, axis=1):
        self.name = name
        self.axis = int(axis)

    def _axis(self, ndims):
        axis = self.axis + ndims if self.axis < 0 else self.axis
        if not 0 < axis < ndims:
            raise ValueError(f"Concatenate '{self.name}': axis {self.axis} is not a non-batch "
                             f"axis of {ndims}D inputs {AXIS_NAMES.get(ndims, '')}")
        return axis

    def output_dims(self, input_dims):
        dims = [tuple(d) for d in input_dims]
        check_count(self, len(dims))
        axis = self._axis(len(dims[0]))
        check_dims(self, dims, axis)
        out = list(dims[0])
        out[axis] = sum(d[axis] for d in dims)
        return tuple(out)

    def forward(self, builder, x, need_input_grad=None):
        """x: the input Tensors; need_input_grad: one bool per input (None: all True)."""
        tensors = list(x)
        check_count(self, len(tensors))
        flat = [i for i, t in enumerate(tensors) if t.flattened]
        if flat:
            # Keras concatenates the (H, W, C) feature vectors; the memory is still 4D in the
            # producer's layout, so that is no oneDNN concat of the 4D tensors.
            raise ValueError(f"Concatenate '{self.name}': inputs {flat} are flattened 4D "
                             "tensors; concatenating flattened tensors is not supported")
        axis = self._axis(len(tensors[0].dims))
        check_tensors(self, tensors, axis)
        need = needed(need_input_grad, len(tensors))
        data_format = tensors[0].data_format
        data_type = tensors[0].memory.desc.data_type
        # oneDNN concat takes one data type: convert the odd ones out (bf16 beside f32)
        sources = [t.memory if t.memory.desc.data_type == data_type else builder.reorder(
                       t.memory, MemoryDesc.with_tag(t.dims, data_type,
                                                     plain_tag(len(t.dims), data_format)),
                       f"{self.name} input {i} to data type")
                   for i, t in enumerate(tensors)]
        descs = [s.desc for s in sources]
        output_dims = self.output_dims([d.dims for d in descs])
        shapes = (f"Concatenate '{self.name}' axis {axis} "
                  f"{' + '.join(str(list(d.dims)) for d in descs)}")

        primitive = builder.primitive(*concat_descriptor(
            MemoryDesc.any(output_dims, data_type), axis, descs, shapes))
        output = builder.allocate(primitive.pd.md(dnnl.query_dst_md))
        args = {dnnl.ARG_MULTIPLE_SRC + i: s for i, s in enumerate(sources)}
        args[dnnl.ARG_DST] = output
        builder.add_forward(builder.bind(primitive, args, f"{self.name} forward"))
        offsets = [sum(d.dims[axis] for d in descs[:i]) for i in range(len(descs))]

        def backward(output_grad):
            if not any(need):
                return [None] * len(need)
            grad = self._regions_readable(builder, output_grad, descs, axis, offsets,
                                          data_format)
            grads = []
            for i, wanted in enumerate(need):
                if not wanted:
                    grads.append(None)
                    continue
                region = [0] * len(output_dims)
                region[axis] = offsets[i]
                part = submemory(grad.desc, descs[i].dims, region)
                target_desc = tensors[i].memory.desc
                reorder = builder.primitive(*reorder_descriptor(part, target_desc))
                target = builder.allocate(target_desc)
                # a view of the gradient's bytes through the region's descriptor
                view = Memory(part, grad.storage)
                builder.add_backward(builder.bind(reorder, {dnnl.ARG_FROM: view,
                                                            dnnl.ARG_TO: target},
                                                  f"{self.name} backward {i}"))
                grads.append(target)
            return grads

        return Tensor(output, data_format, backward_reads_memory=False), backward

    def _regions_readable(self, builder, output_grad, descs, axis, offsets, data_format):
        """output_grad, or its reorder into a plain layout if its own cannot describe every
        input's region."""
        for desc, offset in zip(descs, offsets, strict=True):
            region = [0] * len(desc.dims)
            region[axis] = offset
            if submemory(output_grad.desc, desc.dims, region) is None:
                dims = output_grad.desc.dims
                plain = MemoryDesc.with_tag(dims, output_grad.desc.data_type,
                                            plain_tag(len(dims), data_format))
                return builder.reorder(output_grad, plain, f"{self.name} gradient to layout",
                                       backward=True)
        return output_grad
