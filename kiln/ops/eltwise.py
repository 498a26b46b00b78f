"""Element-wise activations (relu, tanh, sigmoid, linear) as oneDNN eltwise primitives.

The same table drives fusion: conv and dense put the forward as a post-op and call
`eltwise_backward` on their output gradient, computed from the saved output (`*_use_dst_for_bwd`).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import layout_key
from ..binding.primitive import PrimitiveDesc, default_attributes
from .numba_config import PARALLEL, njit, prange

# Keras name -> (forward algorithm, backward algorithm that reads the forward output)
ACTIVATIONS = {
    "relu": (dnnl.eltwise_relu, dnnl.eltwise_relu_use_dst_for_bwd),
    "tanh": (dnnl.eltwise_tanh, dnnl.eltwise_tanh_use_dst_for_bwd),
    "sigmoid": (dnnl.eltwise_logistic, dnnl.eltwise_logistic_use_dst_for_bwd),
}
IDENTITY = (None, "linear")
FUSABLE = set(ACTIVATIONS)


def post_ops(activation):
    """The eltwise post-op list for a fused activation (empty for linear)."""
    if activation in IDENTITY:
        return ()
    return ((ACTIVATIONS[activation][0], 0.0, 0.0),)


@njit(**PARALLEL)
def relu_backward_of_sum_kernel(a, b, y, out):
    """out = (a + b) where the relu's output y > 0, else 0 (out may be a or b)."""
    for i in prange(y.size):
        out[i] = a[i] + b[i] if y[i] > 0 else np.float32(0.0)


def _use_dst_forward_pd(builder, alg, desc):
    """Backward eltwise needs a forward descriptor of the same algorithm as its hint."""
    key = ("eltwise fwd hint", alg, layout_key(desc))
    return builder.primitive(key, lambda: PrimitiveDesc(
        "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward", repr(desc),
        dnnl.forward_training, alg, desc.handle, desc.handle, 0.0, 0.0,
        default_attributes().handle)).pd


def eltwise_backward(builder, activation, output, output_grad, label):
    """Add `output_grad *= activation'(output)` (in place where allowed) to the backward list.

    Args:
        output: Memory of the activation's forward output.
        output_grad: Memory of the gradient w.r.t. that output, any layout.
    Returns:
        the Memory holding the gradient w.r.t. the activation's input (same layout as output):
        output_grad itself when the builder lets ops overwrite it.
    """
    if activation in IDENTITY:
        return output_grad
    alg = ACTIVATIONS[activation][1]
    desc = output.desc
    if activation == "relu" and desc.data_type == dnnl.f32 and output_grad.desc == desc:
        summed = builder.take_gradient_sum(output_grad)
        if summed is not None:
            if all(source.desc == desc for source in summed):
                # a residual block's output feeds the next block and its shortcut: the two
                # gradients are added and masked by relu in one pass instead of two
                builder.add_backward(builder.memory_kernel(
                    relu_backward_of_sum_kernel, (*summed, output, output_grad),
                    f"{label} gradient sum and {activation} backward"))
                return output_grad
            builder.add_gradient_sum(output_grad, list(summed), f"{label} gradient sum")
    grad = builder.reorder(output_grad, desc, f"{label} gradient to layout", backward=True)
    hint = _use_dst_forward_pd(builder, alg, desc)
    primitive = builder.primitive(("eltwise bwd", alg, layout_key(desc)), lambda: PrimitiveDesc(
        "dnnl_eltwise_backward_primitive_desc_create", "eltwise backward",
        f"{activation} {desc}", alg, desc.handle, desc.handle, desc.handle, 0.0, 0.0,
        hint.handle, default_attributes().handle))
    # in place, unless the plan handed the same gradient buffer to another consumer too
    input_grad = grad if builder.writable(grad) else builder.allocate(desc)
    builder.add_backward(builder.bind(
        primitive, {dnnl.ARG_DST: output, dnnl.ARG_DIFF_DST: grad, dnnl.ARG_DIFF_SRC: input_grad},
        f"{label} {activation} backward"))
    return input_grad


def eltwise_forward(builder, activation, source, label):
    """A standalone activation: a new buffer `activation(source)` in source's layout."""
    if activation in IDENTITY:
        return source
    alg = ACTIVATIONS[activation][1]  # the *_use_dst_for_bwd form, so backward reads the output
    desc = source.desc
    primitive = builder.primitive(("eltwise fwd", builder.prop_kind, alg, layout_key(desc)),
                                  lambda: PrimitiveDesc(
        "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward",
        f"{activation} {desc}", builder.prop_kind, alg, desc.handle, desc.handle, 0.0, 0.0,
        default_attributes().handle))
    output = builder.allocate(desc)
    builder.add_forward(builder.bind(primitive, {dnnl.ARG_SRC: source, dnnl.ARG_DST: output},
                                     f"{label} {activation}"))
    return output
