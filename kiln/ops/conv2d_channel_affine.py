"""Conv2DChannelAffineOp: a convolution and the per-channel affine after it (a custom layer's
`x * scale + bias`, then a relu: ChannelAffineOp) as one convolution (graph/fusion.py:
fold_conv_channel_affine).

A scale per output channel commutes with the convolution:

    conv(x, W) * s + t = conv(x, W * s) + t,    and a convolution bias b becomes b * s + t.

So the step runs the built-in convolution on the scaled weights W' = W * s, with b' = b * s + t
as its bias and the relu as its post-op. Backward-weights gives the gradients of W' and b' as
it gives a plain convolution's, and the parameters' follow from them exactly (no division by
s, nothing recovered from the output):

    dW = dW' * s,   ds = sum over W's other axes of dW' * W  (+ db' * b),   dt = db',
    db = db' * s.

Per step that is a reorder of the weights with one scale per output channel (oneDNN's
reorder takes the scales as an attribute) each way, and kernels over C floats. Unfused, the
affine read and wrote the whole activation forward and four activation-sized tensors
backward, and kept the convolutional front of a model out of sub-batches.

Weight gradients of sub-batches (and of a layer called more than once) are summed as W' and
b' gradients first; the parameters' gradients are planned once after that sum
(PlanBuilder.after_gradient_sums).

Shape rule, weights and their names: the convolution's and the ChannelAffineOp's, unchanged.
The op is a convolution built from the given one's arguments (which stays as it is); it
plans Conv2DOp's own path, overriding only where the weights come from and where their
gradients go.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import reorder_descriptor
from ..binding.memory import MemoryDesc, layout_key
from . import conv2d_channel_affine_kernels as kernels
from .conv2d import Conv2DOp


class Conv2DChannelAffineOp(Conv2DOp):
    """Args:
        conv: a Conv2DOp without activation or folded batch norm.
        affine: the ChannelAffineOp that reads its output: per-channel (1, filters, 1, 1)
            scale and / or shift, and its activation (None or 'relu').
        activation, channel_affine: an activation (default: the affine's) and a folded batch
            norm applied after the affine (inference plans: Conv2DOp.replace).
    """

    def __init__(self, conv, affine, activation=None, channel_affine=None):
        if conv.activation not in (None, "linear") or conv.channel_affine is not None:
            raise ValueError(f"Conv2D '{conv.name}': a channel affine can only be folded into "
                             "a convolution without activation or folded batch norm")
        if affine.operand_dims != (1, conv.filters, 1, 1):
            raise ValueError(f"ChannelAffine '{affine.name}': operand dims {affine.operand_dims}"
                             f" do not match Conv2D '{conv.name}' of {conv.filters} filters")
        super().__init__(**{**conv.arguments, "activation": activation or affine.activation,
                            "channel_affine": channel_affine})
        self.affine = affine

    def replace(self, **changes):
        """The same fused op with another activation or folded batch norm."""
        unknown = set(changes) - {"activation", "channel_affine"}
        if unknown:
            raise ValueError(f"Conv2D '{self.name}': cannot change {sorted(unknown)} of a "
                             "convolution with a channel affine")
        conv = Conv2DOp(**{**self.arguments, "activation": None, "channel_affine": None})
        return Conv2DChannelAffineOp(conv, self.affine,
                                     changes.get("activation", self.activation),
                                     changes.get("channel_affine", self.channel_affine))

    def parameter_names(self, input_dims):
        return super().parameter_names(input_dims) + self.affine.parameter_names(input_dims)

    @property
    def primitive_bias(self):
        return self.use_bias or self.affine.shift is not None

    def plan(self, builder, x, need_input_grad, activation, residual=None):
        if builder.data_type != dnnl.f32:
            raise NotImplementedError(f"ChannelAffine '{self.affine.name}': runs in float32 "
                                      "only; use the 'float32' dtype policy for this layer")
        return super().plan(builder, x, need_input_grad, activation, residual)

    # -- names and small helpers --------------------------------------------------------------
    def _key(self, what):
        # a string: the gradient sums label their calls with it (the profiler reads the
        # layer name first)
        return f"{self.name} with {self.affine.name}: {what}"

    @property
    def _kernel_name(self):
        return f"{self.name}/{self.kernel_name}"

    def _affine_name(self, operand):
        return f"{self.affine.name}/{operand[0]}"

    def _vector_desc(self):
        return MemoryDesc.with_tag((self.filters,), dnnl.f32, dnnl.a)

    def _scale_mask(self):
        # the output channel is dim 0 of (O, I, kh, kw), dims 0 and 1 of grouped kernels'
        # (g, O / g, I / g, kh, kw): g-major, as the filters are numbered
        return 0b1 if self.groups == 1 else 0b11

    # -- forward: the scaled weights and the bias, once per step -----------------------------
    def _vectors(self, builder):
        """(the scale as (C,) floats or None, the bias b * s + t as (C,) floats or None)."""

        def make():
            affine, channels = self.affine, self.filters
            operands = []
            for operand, fill in ((affine.scale, 1.0), (affine.shift, 0.0)):
                if operand is None:
                    operands.append(np.full(channels, fill, np.float32))
                else:
                    desc = MemoryDesc.with_tag(operand[1], dnnl.f32, operand[2])
                    operands.append(builder.param(self._affine_name(operand), desc))
            bias = (builder.param(f"{self.name}/bias", self._vector_desc()) if self.use_bias
                    else np.zeros(channels, np.float32))
            scale = builder.allocate(self._vector_desc()) if affine.scale is not None else None
            shifted = builder.allocate(self._vector_desc()) if self.primitive_bias else None
            unused = np.zeros(channels, np.float32)
            builder.add_forward(builder.memory_kernel(kernels.affine_vectors, (
                unused if scale is None else scale, unused if shifted is None else shifted,
                *operands, bias, scale is not None, shifted is not None),
                f"{self.name} with {affine.name}: scale and bias vectors"))
            return scale, shifted

        return builder.derived(self._key("vectors"), make)

    def kernel_value(self, builder, desc):
        if self.affine.scale is None:  # no scale: the weights are the kernel itself
            return super().kernel_value(builder, desc)

        def scaled_weights():
            kernel = super(Conv2DChannelAffineOp, self).kernel_value(builder, desc)
            scale, _ = self._vectors(builder)
            target = builder.allocate(desc)
            self._scaled_reorder(builder, kernel, target, scale, builder.add_forward,
                                 f"{self.name} kernel times {self.affine.name} scale")
            return target

        weights = builder.derived(self._key("scaled weights"), scaled_weights)
        if weights.desc == desc:
            return weights
        return builder.derived(
            self._key(f"scaled weights in {layout_key(desc)}"),
            lambda: builder.reorder(weights, desc, f"{self.name} scaled kernel to layout"))

    def bias_value(self, builder, desc):
        return self._vectors(builder)[1]

    def _scaled_reorder(self, builder, source, target, scale, add, label):
        mask = self._scale_mask()
        primitive = builder.primitive(*reorder_descriptor(source.desc, target.desc, mask))
        add(builder.bind(primitive, {dnnl.ARG_FROM: source, dnnl.ARG_TO: target,
                                     dnnl.ARG_ATTR_SCALES | dnnl.ARG_SRC: scale}, label))

    # -- backward: gradients of W' and b', then the parameters' --------------------------------
    def _names(self):
        names = [self._kernel_name] + ([f"{self.name}/bias"] if self.use_bias else [])
        return names + [self._affine_name(o) for o in (self.affine.scale, self.affine.shift)
                        if o is not None]

    def wants_weight_grads(self, builder):
        return any(builder.wants_grad(name) for name in self._names())

    def weight_grad_targets(self, builder, weights_desc, bias_desc):
        if self.affine.scale is None and builder.wants_grad(self._kernel_name):
            weights = builder.param_grad(self._kernel_name, weights_desc)  # dW' is dW
        else:
            weights = builder.derived_grad(self._key("W'"), weights_desc)
        bias = (builder.derived_grad(self._key("b'"), bias_desc)
                if self.primitive_bias else None)
        builder.after_gradient_sums(self._key("parameter gradients"),
                                    lambda: self._parameter_grads(builder, weights_desc))
        return weights, bias

    def _parameter_grads(self, builder, weights_desc):
        """Plan dW, ds, dt and db from the summed gradients of W' and b' (see the module)."""
        affine, channels = self.affine, self.filters
        total = builder.derived  # the totals derived_grad() made (the key is already there)
        scale, _ = self._vectors(builder)
        weights_grad = None
        if affine.scale is not None:
            weights_grad = total(self._key("W'"), None)
            if builder.wants_grad(self._kernel_name):
                stored = builder.parameters.grad_memory(self._kernel_name).desc
                self._scaled_reorder(builder, weights_grad,
                                     builder.param_grad(self._kernel_name, stored), scale,
                                     builder.add_backward,
                                     f"{self.name} kernel gradient: times {affine.name} scale")
        unused = np.zeros(channels, np.float32)
        wanted = [(self._affine_name(operand), MemoryDesc.with_tag(operand[1], dnnl.f32,
                                                                   operand[2]))
                  if operand is not None else None for operand in (affine.scale, affine.shift)]
        wanted.append((f"{self.name}/bias", self._vector_desc()) if self.use_bias else None)
        targets = [builder.param_grad(*w) if w is not None and builder.wants_grad(w[0])
                   else np.zeros(channels, np.float32)  # computed, not kept
                   for w in wanted]
        if all(isinstance(t, np.ndarray) for t in targets):
            return
        per_channel, plain_grad, plain_kernel = 0, unused, unused
        if affine.scale is not None and not isinstance(targets[0], np.ndarray):
            dims = weights_desc.dims
            plain = MemoryDesc.with_tag(dims, dnnl.f32, dnnl.abcd if len(dims) == 4
                                        else dnnl.abcde)
            kernel = builder.parameters.value_memory(self._kernel_name, weights_desc)
            plain_grad = builder.reorder(weights_grad, plain, f"{self.name} kernel gradient "
                                         "to plain", backward=True)
            plain_kernel = builder.reorder(kernel, plain, f"{self.name} kernel to plain",
                                           backward=True)
            per_channel = int(np.prod(dims)) // channels
        bias_grad = total(self._key("b'"), None) if self.primitive_bias else unused
        conv_bias = (builder.param(f"{self.name}/bias", self._vector_desc()) if self.use_bias
                     else unused)
        builder.add_backward(builder.memory_kernel(kernels.affine_vector_grads, (
            *targets, plain_grad, plain_kernel, bias_grad,
            np.ones(channels, np.float32) if scale is None else scale, conv_bias, per_channel),
            f"{self.name} with {affine.name}: scale, shift and bias gradients"))
