"""LayerNormOp (oneDNN layer normalization) and AxisNormalizationOp (numba kernels: middle
axes, rms_scaling, RMS, unit and group normalization) against float64 numpy references and
central differences."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op

from kiln.ops import axis_normalization_kernels as kernels
from kiln.ops.axis_normalization import AxisNormalizationOp, group_view, layer_view
from kiln.ops.layer_norm import LayerNormOp, layer_norm_op

EPSILON = 1e-3


def normalized_reference(x, axes, mode, epsilon, gamma=None, beta=None):
    """Keras 3's layer_normalization / rms_normalization / normalize over `axes` (float64)."""
    axes = tuple(axes)
    if mode == kernels.UNIT:
        squares = np.sum(x * x, axis=axes, keepdims=True)
        with np.errstate(divide="ignore"):  # a zero row: 1 / 0 = inf, clamped as Keras
            return x * np.minimum(1 / np.sqrt(squares), 1 / epsilon)
    shape = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    mean = x.mean(axis=axes, keepdims=True)
    variance = x.var(axis=axes, keepdims=True)
    if mode == kernels.CENTERED:
        y = (x - mean) / np.sqrt(variance + epsilon)
    elif mode == kernels.VARIANCE_SCALED:
        y = x / np.sqrt(variance + epsilon)
    else:
        y = x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + epsilon)
    if gamma is not None:
        y = y * gamma.reshape(shape)
    if beta is not None:
        y = y + beta.reshape(shape)
    return y


def group_reference(x, groups, channel_axis, epsilon, gamma=None, beta=None):
    """Keras 3's GroupNormalization: statistics per (sample, group) over everything else."""
    shape = list(x.shape)
    channels = shape[channel_axis]
    grouped = x.reshape(shape[:channel_axis] + [groups, channels // groups]
                        + shape[channel_axis + 1:])
    axes = tuple(i for i in range(1, grouped.ndim) if i != channel_axis)
    mean = grouped.mean(axis=axes, keepdims=True)
    variance = grouped.var(axis=axes, keepdims=True)
    y = ((grouped - mean) / np.sqrt(variance + epsilon)).reshape(x.shape)
    broadcast = [channels if i == channel_axis else 1 for i in range(x.ndim)]
    if gamma is not None:
        y = y * gamma.reshape(broadcast)
    if beta is not None:
        y = y + beta.reshape(broadcast)
    return y


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) * 2 + 1).astype(np.float32), rng.normal(size=shape)


LAYER_CASES = [  # input shape, Keras axes, rms_scaling, center, scale, expected op
    ((4, 6), [1], False, True, True, LayerNormOp),
    ((3, 5, 8), [2], False, True, True, LayerNormOp),
    ((3, 5, 8), [2], False, False, True, LayerNormOp),
    ((3, 5, 8), [2], False, True, False, LayerNormOp),
    ((3, 5, 8), [2], False, False, False, LayerNormOp),
    ((3, 5, 8), [1, 2], False, True, True, LayerNormOp),
    ((2, 3, 4, 5), [3], False, True, True, LayerNormOp),
    ((2, 3, 4, 5), [2, 3], False, True, True, LayerNormOp),
    ((3, 5, 8), [1], False, True, True, AxisNormalizationOp),
    ((2, 3, 4, 5), [1, 2], False, False, True, AxisNormalizationOp),
    ((3, 5, 8), [2], True, True, True, AxisNormalizationOp),
    ((2, 3, 4, 5), [1], True, True, True, AxisNormalizationOp),
]


@pytest.mark.parametrize("shape, axes, rms_scaling, center, scale, kind", LAYER_CASES)
def test_layer_normalization(shape, axes, rms_scaling, center, scale, kind):
    op = layer_norm_op("ln", axes, EPSILON, center, scale, rms_scaling, rank=len(shape))
    assert type(op) is kind
    x, dy = _data(shape)
    rng = np.random.default_rng(1)
    count = int(np.prod([shape[a] for a in axes]))
    params = {}
    if scale or rms_scaling:
        params["ln/gamma"] = rng.normal(size=count)
    if center and not rms_scaling:
        params["ln/beta"] = rng.normal(size=count)
    mode = kernels.VARIANCE_SCALED if rms_scaling else kernels.CENTERED

    def reference(x, p):
        return normalized_reference(x, axes, mode, EPSILON, p.get("ln/gamma"), p.get("ln/beta"))

    result, harness = check_op(op, x, params, dy, reference, rtol=2e-4, atol=2e-4)
    assert set(result.param_grads) == set(params)
    labels = [call.label for call in harness.forward_calls]
    assert labels == ["ln forward"], labels  # plain input: no reorder on either side


def test_layer_normalization_channels_first_last_axis():
    """Keras's axis -1 of a channels_first image is W: the logical dims' last one."""
    x, dy = _data((2, 3, 4, 5))
    op = layer_norm_op("ln", [3], EPSILON, rank=4, data_format=CHANNELS_FIRST)
    params = {"ln/gamma": np.linspace(0.5, 2, 5), "ln/beta": np.linspace(-1, 1, 5)}
    check_op(op, x, params, dy, lambda x, p: normalized_reference(
        x, [3], kernels.CENTERED, EPSILON, p["ln/gamma"], p["ln/beta"]),
        data_format=CHANNELS_FIRST, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("shape, axes", [((4, 6), [1]), ((3, 5, 8), [2]), ((3, 5, 8), [1])])
def test_rms_normalization(shape, axes):
    op = AxisNormalizationOp("rms", "RMSNormalization", lambda s: layer_view(s, axes, "rms"),
                             kernels.ROOT_MEAN_SQUARE, 1e-6, ("scale", None))
    x, dy = _data(shape)
    params = {"rms/scale": np.linspace(0.5, 1.5, int(np.prod([shape[a] for a in axes])))}
    check_op(op, x, params, dy, lambda x, p: normalized_reference(
        x, axes, kernels.ROOT_MEAN_SQUARE, 1e-6, p["rms/scale"]), rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("shape, axes", [((4, 6), [1]), ((3, 5, 8), [2]), ((2, 3, 4, 5), [1, 2])])
def test_unit_normalization(shape, axes):
    op = AxisNormalizationOp("unit", "UnitNormalization", lambda s: layer_view(s, axes, "u"),
                             kernels.UNIT, 1e-12)
    x, dy = _data(shape)
    x[0] = 0.0  # a zero row: the clamp holds, gradient r * dy
    result, _ = check_op(op, x, {}, dy, lambda x, p: normalized_reference(
        x, axes, kernels.UNIT, 1e-12), rtol=2e-4, atol=2e-4, numeric=False)
    np.testing.assert_allclose(result.input_grad[0], dy[0] * 1e12, rtol=1e-5)
    x[0] = 1.0
    check_op(op, x, {}, dy, lambda x, p: normalized_reference(x, axes, kernels.UNIT, 1e-12),
             rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("shape, groups, channel_axis, data_format", [
    ((3, 8), 4, 1, CHANNELS_LAST),
    ((2, 5, 6), 3, 2, CHANNELS_LAST),
    ((2, 3, 4, 6), 2, 3, CHANNELS_LAST),
    ((2, 6, 3, 4), 3, 1, CHANNELS_FIRST),
    ((2, 6, 5), 6, 1, CHANNELS_LAST),
])
def test_group_normalization(shape, groups, channel_axis, data_format):
    op = AxisNormalizationOp("gn", "GroupNormalization",
                             lambda s: group_view(s, channel_axis, groups), kernels.CENTERED,
                             EPSILON, ("gamma", "beta"), data_format)
    x, dy = _data(shape)
    channels = shape[channel_axis]
    params = {"gn/gamma": np.linspace(0.5, 2, channels), "gn/beta": np.linspace(-1, 1, channels)}
    check_op(op, x, params, dy, lambda x, p: group_reference(
        x, groups, channel_axis, EPSILON, p["gn/gamma"], p["gn/beta"]),
        data_format=data_format, rtol=2e-4, atol=2e-4)


def test_layer_normalization_non_consecutive_axes_error():
    with pytest.raises(ValueError, match=r"LayerNormalization 'ln'.*axis.*consecutive"):
        layer_norm_op("ln", [1, 3], rank=4).output_dims((2, 5, 3, 4))


class ToBF16Op:
    """A test-only op: its input converted to bf16 (the gradient back to f32), so the op after
    it sees a bf16 plan's activations."""

    name = "to_bf16"
    arity = 1
    per_image = False

    def parameter_dims(self, input_dims):
        return {}

    def output_dims(self, input_dims):
        return tuple(input_dims)

    def forward(self, builder, x, need_input_grad=True):
        from kiln.binding import constants as dnnl
        from kiln.ops.reshape import keras_layout

        def converted(memory, data_type, backward):
            return builder.reorder(memory, keras_layout(x.dims, x.data_format, x.flattened,
                                                        data_type), "convert", backward)

        return (x.with_memory(converted(x.memory, dnnl.bf16, False)),
                lambda grad: converted(grad, dnnl.f32, True))


@pytest.mark.parametrize("axes", [[2], [1]], ids=["onednn", "numba"])
def test_bf16_activations_are_normalized_in_f32(axes):
    """bf16 in and out, f32 inside (oneDNN's bf16 kernel where the CPU has one)."""
    from kiln.binding import constants as dnnl

    x, dy = _data((3, 5, 8))
    op = layer_norm_op("ln", axes, EPSILON, rank=3)
    count = int(np.prod([x.shape[a] for a in axes]))
    params = {"ln/gamma": np.linspace(0.5, 2, count), "ln/beta": np.linspace(-1, 1, count)}
    result, harness = check_op([ToBF16Op(), op], x, params, dy, lambda x, p: normalized_reference(
        x.astype(np.float32).astype(np.float64), axes, kernels.CENTERED, EPSILON,
        p["ln/gamma"], p["ln/beta"]), rtol=2e-2, atol=2e-2, numeric=False)
    assert harness.output_tensor.memory.desc.data_type == dnnl.bf16
    rounded = x.astype(np.float64)  # what ToBF16Op keeps of x, roughly: compare loosely
    f32, _ = check_op(op, rounded, params, dy, lambda x, p: normalized_reference(
        x, axes, kernels.CENTERED, EPSILON, p["ln/gamma"], p["ln/beta"]), numeric=False,
        rtol=1e-3, atol=1e-3)
    scale = np.abs(f32.input_grad).max()
    np.testing.assert_allclose(result.input_grad, f32.input_grad, atol=0.05 * scale)
    for name in params:
        np.testing.assert_allclose(result.param_grads[name], f32.param_grads[name],
                                   atol=0.05 * np.abs(f32.param_grads[name]).max())


@pytest.mark.parametrize("axes", [[2], [1]], ids=["onednn", "numba"])
def test_frozen_weights_and_no_input_gradient(axes):
    """A frozen layer still passes its input gradient back (oneDNN's backward_data); the first
    layer of a model computes its weight gradients without one."""
    x, dy = _data((3, 5, 8))
    count = int(np.prod([x.shape[a] for a in axes]))
    params = {"ln/gamma": np.linspace(0.5, 2, count), "ln/beta": np.linspace(-1, 1, count)}
    op = layer_norm_op("ln", axes, EPSILON, rank=3)
    whole = OpHarness(op, x, params).run(x, dy)
    frozen = OpHarness(op, x, params, frozen=tuple(params)).run(x, dy)
    np.testing.assert_allclose(frozen.input_grad, whole.input_grad, rtol=1e-5, atol=1e-6)
    assert frozen.param_grads["ln/gamma"].shape == (count,)
    without = OpHarness(op, x, params, need_input_grad=False).run(x, dy)
    assert without.input_grad is None
    for name in params:
        np.testing.assert_allclose(without.param_grads[name], whole.param_grads[name],
                                   rtol=1e-5, atol=1e-6)
