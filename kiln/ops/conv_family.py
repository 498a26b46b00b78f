"""The one planning path of the convolution family: convolution, deconvolution (transposed
convolution) and inner product (DenseOp) are the same three oneDNN primitives each, forward,
backward-data and backward-weights (with DIFF_BIAS: the bias gradient comes from the same
pass over the output gradient, never from a separate reduction).

`Primitives` holds what one layer's three descriptors share (the family, the geometry, the
weight and bias descriptors) and makes each from `descriptor()`, so a primitive's cache key is
its arguments. `Pass` plans one layer's calls once the op has chosen its primitives' layouts
(layout_preference.prefer): the forward call, the bf16 master weights' layout, and the
backward (activation derivative, then weights, then data). The ops keep only what differs:
shapes, padding rules, layout choices and where weights come from (Conv2DChannelAffineOp's
scaled weights).
"""

from dataclasses import dataclass, field

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.memory import MemoryDesc
from ..binding.post_ops import NONE
from .eltwise import eltwise_backward


@dataclass(frozen=True)
class Family:
    """One of oneDNN's three: its C name, its algorithm argument (None: inner product takes
    none) and whether it has a geometry (strides, dilations, paddings)."""

    primitive: str
    algorithm: int | None

    @property
    def display(self):
        return self.primitive.replace("_", " ")

    def create_function(self, what):
        return f"dnnl_{self.primitive}_{what}_primitive_desc_create"


CONVOLUTION = Family("convolution", dnnl.convolution_direct)
DECONVOLUTION = Family("deconvolution", dnnl.deconvolution_direct)
INNER_PRODUCT = Family("inner_product", None)


@dataclass(frozen=True)
class Primitives:
    """The (key, make) descriptors of one layer's three primitives.

    Args:
        family: CONVOLUTION, DECONVOLUTION or INNER_PRODUCT.
        shapes: the layer and its dims, for error messages.
        weight_dims: logical kernel dims; data_type: the activations' (bf16 or f32).
        bias: the bias descriptor or None.
        geometry: (strides, dilations as oneDNN's gaps, left padding, right padding), tuples
            of ints; () for inner product.
    """

    family: Family
    shapes: str
    weight_dims: tuple
    data_type: int
    bias: object = None
    geometry: tuple = ()
    weights: MemoryDesc = field(init=False)
    weights_grad: MemoryDesc = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "weights", MemoryDesc.any(self.weight_dims, self.data_type))
        # weight gradients are f32 even when activations are bf16
        object.__setattr__(self, "weights_grad", MemoryDesc.any(self.weight_dims, dnnl.f32))

    def _make(self, what, leading, tensors, hint=None, post_ops=NONE):
        """(key, make) of `dnnl_<family>_<what>_primitive_desc_create`: the prop kind (forward
        only), the algorithm (not for inner product), the tensors, the geometry, the
        forward's descriptor as a hint (backward only), the attribute."""
        algorithm = () if self.family.algorithm is None else (self.family.algorithm,)
        hints = () if hint is None else (hint.pd,)
        return descriptor(self.family.create_function(what.replace(" ", "_")),
                          f"{self.family.display} {what}", self.shapes,
                          *leading, *algorithm, *tensors, *self.geometry, *hints,
                          post_ops=post_ops)

    def forward(self, kind, src, dst, post_ops=NONE):
        """dst = post_ops(src (*) weights + bias)."""
        return self._make("forward", (kind,), (src, self.weights, self.bias, dst),
                          post_ops=post_ops)

    def backward_data(self, diff_src, diff_dst, hint, weights=None):
        """diff_src from diff_dst and the weights (in `weights`, default: oneDNN's choice)."""
        return self._make("backward data", (), (
            diff_src, self.weights if weights is None else weights, diff_dst), hint)

    def backward_weights(self, src, diff_dst, hint):
        """The weights' and the bias's gradients from src and diff_dst."""
        return self._make("backward weights", (), (src, self.weights_grad, self.bias,
                                                   diff_dst), hint)


class Pass:
    """One layer's calls on its chosen primitives.

    Args:
        builder: the PlanBuilder; name: the layer's name (labels).
        weights: weights(desc) -> the kernel Memory in layout desc.
        weight_grads: weight_grads(weights_desc) -> (kernel gradient Memory, bias gradient
            Memory or None), or None when no weight gradient is wanted (a frozen layer).
    """

    def __init__(self, builder, name, weights, weight_grads):
        self.builder = builder
        self.name = name
        self.weights = weights
        self.weight_grads = weight_grads
        # plan_weights(src, grad, weight_grads) -> whether it planned the weight gradients
        # itself (a numba kernel where oneDNN has no fast one: depthwise_weights.py)
        self.plan_weights = None

    @classmethod
    def over_parameters(cls, builder, name, kernel, bias_desc, backward_weights):
        """A Pass over the layer's own weights: the kernel `kernel` (its full name) and, when
        `bias_desc` is given, `<name>/bias`; their gradients only when the kernel learns; f32
        masters in backward-weights' layout under bf16 (master_layout)."""
        bias = f"{name}/bias" if bias_desc is not None else None

        def weight_grads(weights_desc):
            return (builder.param_grad(kernel, weights_desc),
                    builder.param_grad(bias, bias_desc) if bias else None)

        steps = cls(builder, name, lambda desc: builder.param(kernel, desc),
                    weight_grads if builder.wants_grad(kernel) else None)
        steps.master_layout(kernel, backward_weights)
        steps.bias = (lambda: builder.param(bias, bias_desc)) if bias else (lambda: None)
        return steps

    def master_layout(self, kernel, backward_weights):
        """bf16 compute keeps f32 master weights in the layout their gradient comes in."""
        if self.builder.training and self.builder.data_type != dnnl.f32:
            self.builder.master_layout(kernel,
                                       backward_weights().pd.md(dnnl.query_diff_weights_md))

    def forward(self, fwd, src, dst, bias=None, post_op_args=None):
        """Bind fwd reading `src` (reordered into its layout) and writing `dst`."""
        builder = self.builder
        args = {dnnl.ARG_SRC: src,
                dnnl.ARG_WEIGHTS: self.weights(fwd.pd.md(dnnl.query_weights_md)),
                dnnl.ARG_DST: dst}
        if bias is not None:
            args[dnnl.ARG_BIAS] = bias
        args.update(post_op_args or {})
        builder.add_forward(builder.bind(fwd, args, f"{self.name} forward"))

    def backward(self, grad, src, activation, output, applied_downstream, need_input_grad,
                 backward_weights, backward_data):
        """Plan the backward of `output = activation(layer(src))` for the output gradient
        `grad`: the activation's derivative (unless a max pooling downstream applied it),
        the weight gradients (when wanted), the input gradient (returned; None when not
        needed). backward_weights() / backward_data(grad) choose the primitives."""
        builder, name = self.builder, self.name
        if not applied_downstream:
            grad = eltwise_backward(builder, activation, output, grad, name)
        if self.weight_grads is not None and not (  # not for a frozen layer
                self.plan_weights and self.plan_weights(src, grad, self.weight_grads)):
            bwd_w = backward_weights()
            weights_grad, bias_grad = self.weight_grads(
                bwd_w.pd.md(dnnl.query_diff_weights_md))
            args = {
                dnnl.ARG_SRC: builder.reorder(src, bwd_w.pd.md(dnnl.query_src_md),
                                              f"{name} input for weights", backward=True),
                dnnl.ARG_DIFF_DST: builder.reorder(grad, bwd_w.pd.md(dnnl.query_diff_dst_md),
                                                   f"{name} gradient for weights",
                                                   backward=True),
                dnnl.ARG_DIFF_WEIGHTS: weights_grad}
            if bias_grad is not None:
                args[dnnl.ARG_DIFF_BIAS] = bias_grad
            builder.add_backward(builder.bind(bwd_w, args, f"{name} backward weights"))
        if not need_input_grad:
            return None
        bwd_d = backward_data(grad)
        input_grad = builder.allocate(bwd_d.pd.md(dnnl.query_diff_src_md))
        builder.add_backward(builder.bind(bwd_d, {
            dnnl.ARG_DIFF_DST: builder.reorder(grad, bwd_d.pd.md(dnnl.query_diff_dst_md),
                                               f"{name} gradient for data", backward=True),
            dnnl.ARG_WEIGHTS: self.weights(bwd_d.pd.md(dnnl.query_weights_md)),
            dnnl.ARG_DIFF_SRC: input_grad}, f"{name} backward data"))
        return input_grad
