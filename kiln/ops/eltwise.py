"""Element-wise activations: every Keras activation as oneDNN eltwise (or numba where oneDNN
has no algorithm), one table for standalone activations and for post-op fusion.

An activation is named by its Keras name ("relu", "gelu", "silu", ...) or, with arguments
other than Keras's defaults, by the value `activation_name("relu", max_value=6.0)`: an
`ActivationName` that keeps the arguments as data and reads as "relu(max_value=6.0)" in
labels. `spec(name)` resolves it to an `EltwiseSpec` (from the arguments, never by reading
the text back):

- `post_ops`: the oneDNN eltwise ops that compute it, a PostOps value (fused into conv / dense /
  add, or run as one standalone eltwise primitive when there is one); None when oneDNN cannot.
- the backward: one oneDNN eltwise backward algorithm, or a numba kernel, reading either the
  activation's output ("dst") or its input ("src").

An activation is FUSABLE into a producer only when it has post-ops and a backward that reads
the output, the only thing a fused primitive saves. Those whose derivative needs the input
(gelu, swish, mish, hard_silu) stay standalone ops that keep their input for backward.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor
from ..binding.post_ops import NONE, Eltwise, PostOps
from . import eltwise_kernels as kernels
from .numba_config import PARALLEL, njit, prange

IDENTITY = (None, "linear")


@dataclass(frozen=True)
class EltwiseSpec:
    """How one activation runs. post_ops: a PostOps of Eltwise items, or None; backward:
    (oneDNN alg, alpha, beta) or a numba kernel (saved, dy, dx, a, b, c); reads: "dst" or
    "src"; forward_kernel: numba (x, y, a, b, c) when post_ops is not one oneDNN op; params:
    the kernels' (a, b, c); monotone: non-decreasing (max pooling may then apply the
    derivative after pooling)."""

    post_ops: PostOps | None
    backward: object
    reads: str
    forward_kernel: object = None
    params: tuple = (0.0, 0.0, 0.0)
    monotone: bool = False

    @property
    def fusable(self):
        return self.post_ops is not None and self.reads == "dst"


def _onednn(alg, alpha=0.0, beta=0.0, backward=None, reads="src", monotone=False):
    """One oneDNN algorithm forward; backward `backward` (default: the same, from src)."""
    return EltwiseSpec(_chain((alg, alpha, beta)), (backward or alg, alpha, beta), reads,
                       monotone=monotone)


def _chain(*items):
    """A PostOps of eltwise (alg, alpha, beta) items."""
    return PostOps(tuple(Eltwise(alg, float(alpha), float(beta)) for alg, alpha, beta in items))


def _relu(negative_slope=0.0, max_value=None, threshold=0.0):
    slope = float(negative_slope)
    if threshold == 0 and max_value is None:
        # relu_use_dst_for_bwd needs a slope >= 0 (the sign of y must tell that of x)
        if slope >= 0:
            return _onednn(dnnl.eltwise_relu, slope, 0.0, dnnl.eltwise_relu_use_dst_for_bwd,
                           "dst", monotone=True)
        return _onednn(dnnl.eltwise_relu, slope, 0.0)
    if threshold == 0 and slope == 0 and max_value >= 0:
        return _onednn(dnnl.eltwise_clip_v2, 0.0, float(max_value),
                       dnnl.eltwise_clip_v2_use_dst_for_bwd, "dst", monotone=True)
    # a threshold, or a slope with a ceiling: Keras's own formula in a numba kernel
    ceiling = -1.0 if max_value is None else float(max_value)
    return EltwiseSpec(None, kernels.relu_general_backward_src, "src",
                       kernels.relu_general_forward, (slope, ceiling, float(threshold)))


def _elu(alpha=1.0):
    if alpha >= 0:
        return _onednn(dnnl.eltwise_elu, float(alpha), 0.0, dnnl.eltwise_elu_use_dst_for_bwd,
                       "dst", monotone=True)
    return _onednn(dnnl.eltwise_elu, float(alpha))


def _gelu(approximate=False):
    return _onednn(dnnl.eltwise_gelu_tanh if approximate else dnnl.eltwise_gelu_erf)


# Keras name -> (builder of its spec from the Keras arguments, those arguments' defaults)
_BUILDERS = {
    "relu": (_relu, {"negative_slope": 0.0, "max_value": None, "threshold": 0.0}),
    "relu6": (lambda: _relu(max_value=6.0), {}),
    "leaky_relu": (lambda negative_slope=0.2: _relu(negative_slope), {"negative_slope": 0.2}),
    "elu": (_elu, {"alpha": 1.0}),
    "gelu": (_gelu, {"approximate": False}),
    "tanh": (lambda: _onednn(dnnl.eltwise_tanh, backward=dnnl.eltwise_tanh_use_dst_for_bwd,
                             reads="dst", monotone=True), {}),
    "sigmoid": (lambda: _onednn(dnnl.eltwise_logistic,
                                backward=dnnl.eltwise_logistic_use_dst_for_bwd, reads="dst",
                                monotone=True), {}),
    "exponential": (lambda: _onednn(dnnl.eltwise_exp, backward=dnnl.eltwise_exp_use_dst_for_bwd,
                                    reads="dst", monotone=True), {}),
    "silu": (lambda: _onednn(dnnl.eltwise_swish, 1.0), {}),
    "mish": (lambda: _onednn(dnnl.eltwise_mish), {}),
    # relu6(x + 3) / 6: oneDNN's hardsigmoid / hardswish with alpha 1/6, beta 1/2
    "hard_silu": (lambda: _onednn(dnnl.eltwise_hardswish, 1.0 / 6.0, 0.5), {}),
    "hard_sigmoid": (lambda: EltwiseSpec(_chain((dnnl.eltwise_hardsigmoid, 1.0 / 6.0, 0.5)),
                                         kernels.hard_sigmoid_backward_dst, "dst",
                                         params=(1.0 / 6.0, 0.0, 0.0), monotone=True), {}),
    "softplus": (lambda: EltwiseSpec(_chain((dnnl.eltwise_soft_relu, 1.0, 0.0)),
                                     kernels.softplus_backward_dst, "dst", monotone=True), {}),
    # scale * elu(x, alpha): two post-ops, one numba kernel standalone
    "selu": (lambda: EltwiseSpec(_chain((dnnl.eltwise_elu, kernels.SELU_ALPHA, 0.0),
                                        (dnnl.eltwise_linear, kernels.SELU_SCALE, 0.0)),
                                 kernels.selu_backward_dst, "dst", kernels.selu_forward,
                                 monotone=True), {}),
    "softsign": (lambda: EltwiseSpec(None, kernels.softsign_backward_dst, "dst",
                                     kernels.softsign_forward, monotone=True), {}),
}
# Keras's other names for the same functions
ALIASES = {"swish": "silu", "hard_swish": "hard_silu"}
NAMES = sorted(_BUILDERS)


class ActivationName(str):
    """A Keras activation with arguments: the text is its display ("relu(max_value=6.0)", as
    labels, keys and comparisons with plain names use it); `base` and `arguments` (sorted
    (key, value) pairs) are what `spec` reads. Immutable, as str."""

    __slots__ = ("base", "arguments")

    def __new__(cls, base, arguments=()):
        arguments = tuple(sorted(arguments))
        text = f"{base}({', '.join(f'{key}={value!r}' for key, value in arguments)})"
        name = super().__new__(cls, text)
        name.base, name.arguments = base, arguments
        return name

    def __getnewargs__(self):  # copies and pickles rebuild it from the data, not the text
        return (self.base, self.arguments)


def activation_name(base, **arguments):
    """Keras activation `base` with `arguments` (those equal to Keras's defaults are left out):
    the plain name without any, else an ActivationName: activation_name("relu", max_value=6)
    reads "relu(max_value=6.0)"."""
    base = ALIASES.get(base, base)
    defaults = _BUILDERS[base][1]
    given = {key: (float(value) if isinstance(value, (int, float))
                   and not isinstance(value, bool) else value)
             for key, value in arguments.items() if value != defaults[key]}
    if not given:
        return base
    return ActivationName(base, given.items())


@lru_cache(maxsize=None)
def _spec(base, arguments):
    return _BUILDERS[base][0](**dict(arguments))


def spec(name):
    """The EltwiseSpec of an activation: a Keras name or an ActivationName (activation_name);
    KeyError when unknown."""
    if isinstance(name, ActivationName):
        return _spec(name.base, name.arguments)
    base = ALIASES.get(name, name) if isinstance(name, str) else None
    if base not in _BUILDERS:
        raise KeyError(name)
    return _spec(base, ())


def known(name):
    try:
        spec(name)
    except (KeyError, TypeError, ValueError):
        return False
    return True


class _Fusable:
    """`name in FUSABLE`: whether a conv / dense / add may take the activation as post-ops."""

    def __contains__(self, name):
        return known(name) and spec(name).fusable


FUSABLE = _Fusable()
# the default-argument activations that fuse (their backward reads the output)
ACTIVATIONS = {name: spec(name) for name in NAMES if spec(name).fusable}


def post_ops(activation):
    """The PostOps of a fused activation (empty for linear; None when oneDNN has none)."""
    if activation in IDENTITY:
        return NONE
    return spec(activation).post_ops


@njit(**PARALLEL)
def relu_backward_of_sum_kernel(a, b, y, out):
    """out = (a + b) where the relu's output y > 0, else 0 (out may be a or b)."""
    for i in prange(y.size):
        out[i] = a[i] + b[i] if y[i] > 0 else np.float32(0.0)


def _check_f32(desc, activation, label):
    if desc.data_type != dnnl.f32:
        raise NotImplementedError(f"'{label}': activation {activation!r} runs as a float32 "
                                  "kernel (oneDNN has no algorithm for it); use the 'float32' "
                                  "policy for this layer")


def _forward_pd(builder, alg, alpha, beta, desc, prop_kind):
    return builder.primitive(*descriptor(
        "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward", f"alg {alg} {desc}",
        prop_kind, alg, desc, desc, alpha, beta))


def eltwise_backward(builder, activation, output, output_grad, label, source=None):
    """Add `output_grad *= activation'(...)` (in place where allowed) to the backward list.

    Args:
        output: Memory of the activation's forward output.
        output_grad: Memory of the gradient w.r.t. that output, any layout.
        source: Memory of the activation's input, for activations whose derivative reads it
            (spec(activation).reads == "src"); None for the fusable ones.
    Returns:
        the Memory holding the gradient w.r.t. the activation's input (same layout as output):
        output_grad itself when the builder lets ops overwrite it.
    """
    if activation in IDENTITY:
        return output_grad
    eltwise = spec(activation)
    saved = output if eltwise.reads == "dst" else source
    if saved is None:
        raise ValueError(f"'{label}': the backward of {activation!r} reads its input, which "
                         "was not kept")
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
    # in place, unless the plan handed the same gradient buffer to another consumer too
    input_grad = grad if builder.writable(grad) else builder.allocate(desc)
    if not isinstance(eltwise.backward, tuple):
        _check_f32(desc, activation, label)
        builder.add_backward(builder.memory_kernel(
            eltwise.backward, (saved, grad, input_grad, *eltwise.params),
            f"{label} {activation} backward"))
        return input_grad
    alg, alpha, beta = eltwise.backward
    hint = _forward_pd(builder, alg, alpha, beta, desc, dnnl.forward_training).pd
    primitive = builder.primitive(*descriptor(
        "dnnl_eltwise_backward_primitive_desc_create", "eltwise backward",
        f"{activation} {desc}", alg, desc, desc, desc, alpha, beta, hint))
    data_arg = dnnl.ARG_DST if eltwise.reads == "dst" else dnnl.ARG_SRC
    builder.add_backward(builder.bind(
        primitive, {data_arg: saved, dnnl.ARG_DIFF_DST: grad, dnnl.ARG_DIFF_SRC: input_grad},
        f"{label} {activation} backward"))
    return input_grad


def eltwise_forward(builder, activation, source, label):
    """A standalone activation: a new buffer `activation(source)` in source's layout."""
    if activation in IDENTITY:
        return source
    eltwise = spec(activation)
    desc = source.desc
    output = builder.allocate(desc)
    if eltwise.post_ops is None or len(eltwise.post_ops) != 1:
        _check_f32(desc, activation, label)
        builder.add_forward(builder.memory_kernel(
            eltwise.forward_kernel, (source, output, *eltwise.params), f"{label} {activation}"))
        return output
    item = eltwise.post_ops.items[0]
    alg, alpha, beta = item.alg, item.alpha, item.beta
    if eltwise.reads == "dst" and isinstance(eltwise.backward, tuple):
        alg = eltwise.backward[0]  # the *_use_dst_for_bwd form, so backward reads the output
    primitive = _forward_pd(builder, alg, alpha, beta, desc, builder.prop_kind)
    builder.add_forward(builder.bind(primitive, {dnnl.ARG_SRC: source, dnnl.ARG_DST: output},
                                     f"{label} {activation}"))
    return output
