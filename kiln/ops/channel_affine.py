"""ChannelAffineOp: y = x * scale + shift, per channel, then an optional relu: what a custom
layer's `keras.ops.add(keras.ops.multiply(x, self.scale), self.bias)` followed by a relu
becomes once the graph rewrites fuse its ops (graph/fusion.py: fold_channel_affine).

Unfused, those are three ops over the whole tensor: three passes forward and, backward, a
relu mask, two per-channel sums and a times-scale pass over separate buffers. Fused:

- Forward: one oneDNN binary call, `x * scale` with the shift as a binary post-op and the
  relu as an eltwise post-op, reading x in its own layout (a convolution's blocked nChw8c or
  nChw16c) and writing y in the same; numba's forward_kernel on the plain layouts (nhwc,
  nchw), where it is faster (plain_4d), and where oneDNN has only its reference kernel. It
  writes a large output with streaming stores (streaming_stores.py).
- Backward: channel_affine_kernels.backward_kernel, one pass reading dy, y (the relu's mask)
  and x (the scale's gradient), writing dx and summing both
  parameter gradients per channel.

Shape rule: x of logical dims (N, C, H, W) or (N, C); the parameters (1, C, 1, 1) or (1, C),
kept under the names and Keras layouts of the ops it replaces ("<name>/<short name>").
Either parameter may be absent (an add then relu, a multiply then relu).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import Memory, MemoryDesc, layout_key
from ..binding.post_ops import NONE, binary, eltwise
from ..binding.primitive import post_op_arg
from . import channel_affine_kernels as kernels
from .base import Op
from .broadcast_kernels import operand_strides, physical_axes, plan_axes, split_rows
from .layout_preference import prefer
from .numba_config import THREADS
from .tensor import CHANNELS_LAST, Tensor

BLOCKED_TAGS = {4: dnnl.aBcd4b, 8: dnnl.aBcd8b, 16: dnnl.aBcd16b}


def kernel_iteration(desc, parameter_desc):
    """The kernels' (shape, strides) for activations in `desc` and parameters in
    `parameter_desc`: rows of data strides and of parameter strides."""
    axes = physical_axes(desc)
    strides = [operand_strides(axes, desc.dims, desc),
               operand_strides(axes, parameter_desc.dims, parameter_desc)]
    return split_rows(*plan_axes(axes, strides))


def plain_4d(desc):
    """Whether `desc` is a plain 4D layout (nhwc, nchw). There the numba forward_kernel beats
    oneDNN 3.2's binary (jit:uni), whose per-channel broadcast reloads the operand for every
    64-float row of nhwc, and which writes a large output with ordinary stores where the
    kernel streams it (streaming_stores.py). On the blocked layouts oneDNN is as fast or
    faster. Measurements: docs/performance.md, 'Decisions and their measurements'."""
    key = layout_key(desc)
    return len(desc.dims) == 4 and len(key) == 6 and key[4] == () \
        and physical_axes(desc) is not None


def per_channel(dims):
    """Whether logical operand dims are one value per channel: (1, C, 1, 1) or (1, C)."""
    dims = tuple(dims)
    return len(dims) in (2, 4) and dims[0] == 1 and all(d == 1 for d in dims[2:])


class ChannelAffineOp(Op):
    """Args:
        name: the op's (layer's) name: its parameters are "<name>/<short name>".
        scale, shift: (short name, logical dims, Keras tag) of a per-channel parameter, or
            None (no scale: x + shift; no shift: x * scale).
        activation: None or "relu".
    """

    # Each image alone, but never planned in sub-batches yet (nor tested so): off until it is
    per_image = False

    def __init__(self, name, scale=None, shift=None, activation=None):
        if scale is None and shift is None:
            raise ValueError(f"ChannelAffine '{name}': needs a scale, a shift or both")
        if activation not in (None, "relu"):
            raise ValueError(f"ChannelAffine '{name}': argument activation must be None or "
                             f"'relu', got {activation!r}")
        for role, operand in (("scale", scale), ("shift", shift)):
            if operand is not None and not per_channel(operand[1]):
                raise ValueError(f"ChannelAffine '{name}': argument {role} must have logical "
                                 f"dims (1, C, 1, 1) or (1, C), got {tuple(operand[1])}")
        if scale is not None and shift is not None and tuple(scale[1]) != tuple(shift[1]):
            raise ValueError(f"ChannelAffine '{name}': scale dims {tuple(scale[1])} and shift "
                             f"dims {tuple(shift[1])} differ")
        self.name = name
        self.scale, self.shift, self.activation = scale, shift, activation

    def replace(self, **changes):
        """A new ChannelAffineOp with `changes` to the arguments (a fused relu)."""
        arguments = {"name": self.name, "scale": self.scale, "shift": self.shift,
                     "activation": self.activation}
        return ChannelAffineOp(**{**arguments, **changes})

    @property
    def operand_dims(self):
        return tuple((self.scale or self.shift)[1])

    def parameter_dims(self, input_dims):
        return {operand[0]: (tuple(operand[1]), operand[2])
                for operand in (self.scale, self.shift) if operand is not None}

    def output_dims(self, input_dims):
        dims = tuple(input_dims)
        operand = self.operand_dims
        if len(dims) != len(operand) or dims[1] != operand[1]:
            raise ValueError(f"ChannelAffine '{self.name}': a per-channel {operand} operand "
                             f"does not fit an input of logical dims {dims}")
        return dims

    # -- forward --------------------------------------------------------------------------
    def forward(self, builder, x, need_input_grad=True):
        self.output_dims(x.dims)
        if x.memory.desc.data_type != dnnl.f32:
            raise NotImplementedError(f"ChannelAffine '{self.name}': runs in float32 only; "
                                      "use the 'float32' dtype policy for this layer")
        relu = self.activation == "relu"
        desc = x.memory.desc
        if physical_axes(desc) is None:  # a padded blocked layout: walk a plain copy
            tag = dnnl.acdb if len(x.dims) == 4 and x.data_format == CHANNELS_LAST else None
            desc = MemoryDesc.with_tag(x.dims, dnnl.f32, tag)
        source = builder.reorder(x.memory, desc, f"{self.name} input to layout")
        scale, shift = self._parameter_memories(builder, desc)
        output = builder.allocate(desc)
        if plain_4d(desc) or not self._forward_onednn(builder, source, scale, shift,
                                                                  output, relu):
            shape, strides = kernel_iteration(desc, scale.desc)
            builder.add_forward(builder.memory_kernel(kernels.forward_kernel, (
                output, source, scale, shift, relu, shape, strides),
                f"{self.name} forward"))
        result = Tensor(output, x.data_format, x.flattened, activation=self.activation,
                        backward_reads_memory=relu)

        def backward(output_grad):
            return self._backward(builder, output_grad, source, output, scale, relu
                                  and not result.activation_grad_applied_downstream,
                                  need_input_grad)

        return result, backward

    def _parameter_desc(self, desc):
        """The parameters' layout next to activations in `desc`: oneDNN's binary has a jit
        kernel for a per-channel operand onto nChw8c / nChw16c only when the operand is
        blocked alike (its reference kernel otherwise). Unpadded, (1, C, 1, 1) blocked holds
        the C floats in the plain order, so the kernels read it as the plain gradients."""
        key = layout_key(desc)
        if (len(desc.dims) == 4 and len(key) == 6 and key[5] == (1,)
                and key[4][0] in BLOCKED_TAGS):
            return MemoryDesc.with_tag(self.operand_dims, dnnl.f32, BLOCKED_TAGS[key[4][0]])
        tag = (self.scale or self.shift)[2]
        return MemoryDesc.with_tag(self.operand_dims, dnnl.f32, tag)

    def _parameter_memories(self, builder, desc):
        """(scale, shift) in _parameter_desc's layout; a plan-owned 1 or 0 for an absent one."""
        parameter_desc = self._parameter_desc(desc)
        memories = []
        for operand, fill in ((self.scale, 1.0), (self.shift, 0.0)):
            if operand is None:
                memory = Memory(parameter_desc)
                memory.as_array()[:] = fill
            else:
                memory = builder.param(f"{self.name}/{operand[0]}", parameter_desc)
            memories.append(memory)
        return memories

    def _forward_onednn(self, builder, source, scale, shift, output, relu):
        """One binary call (x * scale or x + shift) with the rest as post-ops; False when
        oneDNN has only its reference kernel for the layout."""
        post = NONE
        if self.scale is not None:
            alg, second = dnnl.binary_mul, scale
            if self.shift is not None:
                post += binary(dnnl.binary_add, shift.desc)
        else:
            alg, second = dnnl.binary_add, shift
        if relu:
            post += eltwise(dnnl.eltwise_relu)
        desc = source.desc
        primitive = prefer(lambda: builder.primitive(*descriptor(
            "dnnl_binary_primitive_desc_create", "binary", f"ChannelAffine '{self.name}' {desc}",
            alg, desc, second.desc, desc, post_ops=post)))
        if primitive is None:
            return False
        args = {dnnl.ARG_SRC: source, dnnl.ARG_SRC_1: second, dnnl.ARG_DST: output}
        if self.scale is not None and self.shift is not None:
            args[post_op_arg(0)] = shift
        builder.add_forward(builder.bind(primitive, args, f"{self.name} forward"))
        return True

    # -- backward -------------------------------------------------------------------------
    def _backward(self, builder, output_grad, source, output, scale, relu, need_input_grad):
        desc = output.desc
        grad = builder.reorder(output_grad, desc, f"{self.name} gradient to layout",
                               backward=True)
        # a buffer of its own, not dy's: with dx and dy the same array, LLVM's run-time alias
        # check sends the loop to its scalar version (several times slower:
        # docs/performance.md, 'Decisions and their measurements')
        input_grad = builder.allocate(desc)
        channels = self.operand_dims[1]
        targets = []
        for operand in (self.scale, self.shift):
            name = operand and f"{self.name}/{operand[0]}"
            if operand is not None and builder.wants_grad(name):
                targets.append(builder.param_grad(
                    name, MemoryDesc.with_tag(operand[1], dnnl.f32, operand[2])))
            else:
                targets.append(np.zeros(channels, np.float32))  # computed, not kept
        # without a scale, its gradient is not wanted: read dy again (cached) instead of x
        x = source if self.scale is not None else grad
        shape, strides = kernel_iteration(desc, scale.desc)
        partials = np.zeros((2 * THREADS, channels), np.float32)
        builder.add_backward(builder.memory_kernel(kernels.backward_kernel, (
            input_grad, grad, output, x, scale, targets[0], targets[1], relu, shape, strides,
            partials), f"{self.name} backward"))
        return input_grad if need_input_grad else None
