"""kiln.ops.batch_norm.BatchNormOp against a float64 numpy reference, central differences and
real Keras 3 (JAX backend)."""

import os

import numpy as np
import pytest
from op_checker import (
    CHANNELS_FIRST,
    CHANNELS_LAST,
    OpHarness,
    check_op,
    conv2d_reference,
)

from kiln.binding import constants as dnnl
from kiln.binding.library import lib
from kiln.binding.memory import Memory, MemoryDesc, layout_key
from kiln.binding.reorder import reorder_now
from kiln.ops.batch_norm import BatchNormOp
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.flatten import FlattenOp
from kiln.ops.tensor import Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]
# Keras shapes: 20 channels (not a multiple of 16) and odd spatial sizes
SHAPES = {"4d": (3, 5, 7, 20), "2d": (6, 20)}
AFFINE = {"center-scale": (True, True), "center": (True, False), "scale": (False, True),
          "neither": (False, False)}
STATE = ("bn/moving_mean", "bn/moving_variance")


def channel_axis(ndim, data_format):
    return 1 if ndim == 4 and data_format == CHANNELS_FIRST else ndim - 1


def keras_layout(shape, data_format):
    """A Keras channels_last shape in `data_format`."""
    if len(shape) == 4 and data_format == CHANNELS_FIRST:
        n, h, w, c = shape
        return (n, c, h, w)
    return shape


def bn_reference(x, params, data_format, training=True, relu=False, epsilon=1e-3, dy=None,
                 name="bn"):
    """Keras BatchNormalization (+ relu) in float64: y, or (y, dx, dgamma, dbeta) with dy.
    training=False normalizes with the moving statistics (inference and frozen layers)."""
    axis = channel_axis(x.ndim, data_format)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    channels = x.shape[axis]
    shape = [1] * x.ndim
    shape[axis] = channels

    def per_channel(v):
        return np.asarray(v, dtype=np.float64).reshape(shape)

    if training:
        mean, variance = x.mean(axes), x.var(axes)
    else:
        mean, variance = params[f"{name}/moving_mean"], params[f"{name}/moving_variance"]
    gamma = per_channel(params.get(f"{name}/gamma", np.ones(channels)))
    beta = per_channel(params.get(f"{name}/beta", np.zeros(channels)))
    inv = 1.0 / np.sqrt(per_channel(variance) + epsilon)
    xhat = (x - per_channel(mean)) * inv
    y = gamma * xhat + beta
    if relu:
        y = np.maximum(y, 0.0)
    if dy is None:
        return y
    dz = dy * (y > 0) if relu else dy
    if training:
        dx = gamma * inv * (dz - dz.mean(axes, keepdims=True)
                            - xhat * (dz * xhat).mean(axes, keepdims=True))
    else:
        dx = gamma * inv * dz
    return y, dx, (dz * xhat).sum(axes), dz.sum(axes)


def make_case(shape, data_format, center=True, scale=True, seed=0, dims_channels=None):
    """x (per-channel offsets, so centering matters), gamma/beta/moving statistics, dy."""
    rng = np.random.default_rng(seed)
    channels = shape[-1] if dims_channels is None else dims_channels
    x = (rng.normal(size=shape) * rng.uniform(0.5, 2.0, shape[-1])
         + rng.normal(0, 2, shape[-1])).astype(np.float32)
    if len(shape) == 4 and data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    params = {"bn/moving_mean": rng.normal(0, 0.5, channels),
              "bn/moving_variance": rng.uniform(0.5, 2.0, channels)}
    if scale:
        params["bn/gamma"] = rng.normal(1, 0.3, channels)
    if center:
        params["bn/beta"] = rng.normal(0, 0.5, channels)
    params = {k: v.astype(np.float32) for k, v in params.items()}
    return x, params, rng


def run_bn_case(shape, data_format, center=True, scale=True, relu=False, frozen=False,
                seed=0, **options):
    x, params, rng = make_case(shape, data_format, center, scale, seed)
    dy = rng.normal(size=x.shape).astype(np.float32)
    op = BatchNormOp("bn", center=center, scale=scale, fuse_relu=relu)
    op.frozen = frozen

    def reference(x64, p64):
        return bn_reference(x64, p64, data_format, training=not frozen, relu=relu)

    def reference_grads(x64, p64, dy64):
        _, dx, dgamma, dbeta = bn_reference(x64, p64, data_format, not frozen, relu, dy=dy64)
        grads = {}
        if scale:
            grads["bn/gamma"] = dgamma
        if center:
            grads["bn/beta"] = dbeta
        return dx, grads

    return check_op(op, x, params, dy, reference, data_format, reference_grads, rtol=1e-4,
                    atol=1e-4, grad_rtol=1e-3, grad_atol=1e-4, **options), params


@pytest.mark.parametrize("relu", [False, True], ids=["linear", "fused-relu"])
@pytest.mark.parametrize("affine", list(AFFINE))
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("data_format", FORMATS)
def test_batch_norm_training(data_format, shape, affine, relu):
    """Batch statistics: output and input/gamma/beta gradients vs numpy and central
    differences; no gamma/beta parameter when scale/center is off."""
    center, scale = AFFINE[affine]
    (result, harness), _ = run_bn_case(SHAPES[shape], data_format, center, scale, relu)
    expected = {name for name, on in (("bn/gamma", scale), ("bn/beta", center)) if on}
    assert set(result.param_grads) == expected
    assert set(harness.store.parameters) == expected | set(STATE)
    assert not harness.builder.reorder_labels  # runs in the layout the input has


@pytest.mark.parametrize("momentum", [0.99, 0.9, 0.0])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("data_format", FORMATS)
def test_moving_statistics_follow_keras_formula(data_format, shape, momentum):
    """moving = moving * momentum + batch * (1 - momentum), batch variance biased; twice."""
    x, params, _ = make_case(SHAPES[shape], data_format, seed=2)
    harness = OpHarness(BatchNormOp("bn", momentum=momentum), x, params, data_format)
    axis = channel_axis(x.ndim, data_format)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    x64 = x.astype(np.float64)
    expected = {"bn/moving_mean": params["bn/moving_mean"].astype(np.float64),
                "bn/moving_variance": params["bn/moving_variance"].astype(np.float64)}
    for _ in range(2):
        harness.forward()
        for name, batch in (("bn/moving_mean", x64.mean(axes)),
                            ("bn/moving_variance", x64.var(axes))):
            expected[name] = expected[name] * momentum + batch * (1 - momentum)
            np.testing.assert_allclose(harness.get_param(name), expected[name], rtol=2e-6,
                                       atol=1e-6, err_msg=name)


@pytest.mark.parametrize("relu", [False, True], ids=["linear", "fused-relu"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("data_format", FORMATS)
def test_inference_plan_uses_moving_statistics(data_format, shape, relu):
    x, params, _ = make_case(SHAPES[shape], data_format, seed=3)
    harness = OpHarness(BatchNormOp("bn", fuse_relu=relu), x, params, data_format,
                        training=False)
    expected = bn_reference(x.astype(np.float64), params, data_format, training=False,
                            relu=relu)
    np.testing.assert_allclose(harness.forward(), expected, rtol=1e-5, atol=1e-5)
    for name in STATE:  # read, not updated
        np.testing.assert_array_equal(harness.get_param(name), params[name])
    assert [call.label for call in harness.forward_calls] == ["bn forward"]
    assert harness.builder.backward_calls == []


@pytest.mark.parametrize("relu", [False, True], ids=["linear", "fused-relu"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("data_format", FORMATS)
def test_frozen_uses_moving_statistics_in_training_plans(data_format, shape, relu):
    """Keras 3 runs a trainable=False BatchNormalization in inference mode: moving statistics
    normalize, are not updated, and gradients flow (use_global_stats backward)."""
    (result, harness), params = run_bn_case(SHAPES[shape], data_format, relu=relu,
                                            frozen=True, seed=4)
    for name in STATE:
        np.testing.assert_array_equal(harness.get_param(name), params[name])
    assert [call.label for call in harness.forward_calls] == ["bn forward"]


@pytest.mark.parametrize("data_format", FORMATS)
def test_frozen_weights_get_no_gradient(data_format):
    """gamma/beta with trainable=False: their stored gradients are never written, the input
    gradient is the same; and no backward at all when the input needs none either."""
    x, params, rng = make_case(SHAPES["4d"], data_format, seed=5)
    dy = rng.normal(size=x.shape).astype(np.float32)
    op = BatchNormOp("bn")
    op.frozen = True
    frozen = ("bn/gamma", "bn/beta")
    harness = OpHarness(op, x, params, data_format, frozen=frozen)
    (call,) = harness.backward_calls
    stored = {id(harness.store.grad_memory(name)) for name in frozen}
    assert not stored & {id(memory) for memory in call.args.values()}
    result = harness.run(x, dy)
    for name in frozen:
        assert not result.param_grads[name].any()
    _, dx, _, _ = bn_reference(x.astype(np.float64), params, data_format, training=False,
                               dy=dy.astype(np.float64))
    np.testing.assert_allclose(result.input_grad, dx, rtol=1e-4, atol=1e-5)
    none = OpHarness(op, x, params, data_format, need_input_grad=False, frozen=frozen)
    assert none.input_grad_memory is None and none.backward_calls == []


@pytest.mark.parametrize("data_format", FORMATS)
def test_first_layer_computes_weight_gradients_only(data_format):
    (result, harness), _ = run_bn_case(SHAPES["4d"], data_format, need_input_grad=False,
                                       numeric=False, seed=6)
    assert result.input_grad is None and harness.input_grad_memory is None
    assert set(result.param_grads) == {"bn/gamma", "bn/beta"}


@pytest.mark.parametrize("channels", [16, 20])
@pytest.mark.parametrize("data_format", FORMATS)
def test_after_conv_in_its_blocked_layout(data_format, channels):
    """Conv2D hands over its blocked layout (nChw16c or nChw8c by ISA; 20 channels padded):
    BN normalizes it as it is, and gradients reach the conv kernel."""
    rng = np.random.default_rng(7)
    shape = keras_layout((4, 5, 7, 16), data_format)
    x = rng.normal(size=shape).astype(np.float32)
    _, params, _ = make_case((4, 5, 7, channels), data_format, seed=8)
    params["conv/kernel"] = rng.normal(0, 0.3, (3, 3, 16, channels)).astype(np.float32)
    dy = rng.normal(size=keras_layout((4, 5, 7, channels), data_format)).astype(np.float32)
    ops = [Conv2DOp("conv", channels, (3, 3), padding="same", use_bias=False), BatchNormOp("bn")]

    def reference(x64, p64):
        z = conv2d_reference(x64, p64["conv/kernel"], None, (1, 1), "same", None, data_format)
        return bn_reference(z, p64, data_format)

    _, harness = check_op(ops, x, params, dy, reference, data_format, rtol=1e-4, atol=2e-4,
                          eps=1e-2, entries=6)
    calls = {call.label: call for call in harness.forward_calls}
    conv, bn = calls["conv forward"], calls["bn forward"]
    source = bn.args[dnnl.ARG_SRC]
    assert source is conv.args[dnnl.ARG_DST]
    assert layout_key(source.desc)[4] in ((8,), (16,))  # channel-blocked
    assert bn.args[dnnl.ARG_DST].desc == source.desc
    # the only reorder is the test's plain dy into that layout
    assert [label for label in harness.builder.reorder_labels
            if label.startswith("bn")] == ["bn gradient to layout"]


def plan_by_hand(x, params, tag=None, data_type=dnnl.f32, op=None, dy=None, shared=False):
    """A training plan of one BatchNormOp over x (logical order: (N, C) or (N, C, H, W)) held in
    layout `tag` and `data_type`, planned without the harness so a test picks the input
    layout and hands backward a gradient buffer of its own (plain, f32, values dy).
    Returns (builder, store, output Memory, gradient Memory, input gradient Memory)."""
    store = ParameterStore()
    op = op or BatchNormOp("bn")
    channels = x.shape[1]
    for short, (dims, param_tag) in {**op.parameter_dims((1, channels)),
                                     **op.state_dims((1, channels))}.items():
        store.add(f"bn/{short}", dims, param_tag, params[f"bn/{short}"],
                  trainable=not short.startswith("moving"))
    builder = PlanBuilder(store, training=True, data_type=data_type)
    source = Memory(MemoryDesc.with_tag(x.shape, data_type, tag))
    reorder_now(plain_memory(x), source)
    output, backward = op.forward(builder, Tensor(source, CHANNELS_FIRST), True)
    builder.keep(output.memory)  # read back by the test: bytes of its own
    grad = plain_memory(np.zeros(x.shape) if dy is None else dy)
    if shared:
        builder.share(grad)
    input_grad = builder.keep(backward(grad))
    builder.finish()
    store.pack()
    for call in builder.forward_calls + builder.backward_calls:
        call.run()
    return builder, store, output.memory, grad, input_grad


def plain_memory(array):
    memory = Memory(MemoryDesc.with_tag(array.shape, dnnl.f32))
    memory.as_array()[:] = np.asarray(array, dtype=np.float32).reshape(-1)
    return memory


def read_plain(memory):
    plain = Memory(MemoryDesc.with_tag(memory.desc.dims, dnnl.f32))
    reorder_now(memory, plain)
    return plain.as_array().reshape(memory.desc.dims).copy()


@pytest.mark.parametrize("tag", [dnnl.aBcd16b, dnnl.aBcd8b, dnnl.aBcd4b, dnnl.acdb,
                                 dnnl.abcd], ids=["nChw16c", "nChw8c", "nChw4c", "nhwc", "nchw"])
def test_every_input_layout_gets_an_optimized_kernel(tag):
    """Layouts oneDNN has an optimized kernel for run as they are; the others (nChw16c without
    AVX-512, nChw4c) are reordered to nhwc instead of running the reference kernel."""
    x, params, rng = make_case((4, 5, 7, 20), CHANNELS_FIRST, seed=13)
    dy = rng.normal(size=x.shape)
    builder, _, output, _, input_grad = plan_by_hand(x, params, tag, dy=dy)
    calls = {call.label: call for call in builder.forward_calls + builder.backward_calls}
    for label in ("bn forward", "bn backward"):
        assert not calls[label].primitive.pd.implementation.startswith("ref:"), label
    moved = "bn input to layout" in builder.reorder_labels
    assert moved == (output.desc != MemoryDesc.with_tag(x.shape, dnnl.f32, tag))
    _, dx, _, _ = bn_reference(x.astype(np.float64), params, CHANNELS_FIRST, dy=dy)
    np.testing.assert_allclose(read_plain(output), bn_reference(
        x.astype(np.float64), params, CHANNELS_FIRST), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(read_plain(input_grad), dx, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shared", [False, True], ids=["writable", "shared"])
def test_input_gradient_in_place_only_when_writable(shared):
    x, params, rng = make_case(SHAPES["2d"], CHANNELS_LAST, seed=9)
    dy = rng.normal(size=x.shape).astype(np.float32)
    _, _, _, grad, input_grad = plan_by_hand(x, params, dy=dy, shared=shared)
    assert (input_grad is grad) == (not shared)
    if shared:
        np.testing.assert_array_equal(grad.as_array(), dy.reshape(-1))
    _, dx, _, _ = bn_reference(x.astype(np.float64), params, CHANNELS_LAST,
                               dy=dy.astype(np.float64))
    np.testing.assert_allclose(read_plain(input_grad), dx, rtol=1e-4, atol=1e-5)


def native_bf16():
    isa = lib.dnnl_get_effective_cpu_isa()
    return isa & dnnl.cpu_isa_avx512_core_bf16 == dnnl.cpu_isa_avx512_core_bf16


@pytest.mark.skipif(not native_bf16(), reason="this CPU has no native bf16")
def test_bf16_activations_with_f32_statistics():
    x, params, rng = make_case((64, 20), CHANNELS_LAST, seed=10)
    dy = rng.normal(size=x.shape)
    _, store, output, _, input_grad = plan_by_hand(x, params, data_type=dnnl.bf16, dy=dy)
    assert output.desc.data_type == dnnl.bf16 and input_grad.desc.data_type == dnnl.bf16
    y, dx, dgamma, _ = bn_reference(x.astype(np.float64), params, CHANNELS_LAST, dy=dy)
    np.testing.assert_allclose(read_plain(output), y, rtol=2e-2, atol=3e-2)
    np.testing.assert_allclose(read_plain(input_grad), dx, rtol=3e-2, atol=3e-2)
    np.testing.assert_allclose(store.get_grad("bn/gamma"), dgamma, rtol=3e-2, atol=0.1)


@pytest.mark.skipif(native_bf16(), reason="this CPU runs bf16 batch normalization")
def test_bf16_without_native_support_names_the_layer():
    x, params, _ = make_case((8, 20), CHANNELS_LAST, seed=11)
    with pytest.raises(RuntimeError, match="BatchNormalization 'bn': oneDNN has no bf16"):
        plan_by_hand(x, params, data_type=dnnl.bf16)


def test_shape_rules_and_errors():
    op = BatchNormOp("bn", center=False)
    assert op.output_dims((4, 20, 5, 7)) == (4, 20, 5, 7)
    assert op.parameter_dims((4, 20, 5, 7)) == {"gamma": ((20,), dnnl.a)}
    assert list(BatchNormOp("bn").parameter_dims((4, 20))) == ["gamma", "beta"]
    assert BatchNormOp("bn").state_dims((4, 20)) == {"moving_mean": ((20,), dnnl.a),
                                                  "moving_variance": ((20,), dnnl.a)}
    assert BatchNormOp.per_image is False and BatchNormOp.frozen is False
    with pytest.raises(ValueError, match="BatchNormalization 'b': argument epsilon must be"):
        BatchNormOp("b", epsilon=-1e-3)
    with pytest.raises(ValueError, match=r"BatchNormalization 'b': argument momentum must be "
                                         r"in \[0, 1\], got 1.5"):
        BatchNormOp("b", momentum=1.5)
    with pytest.raises(ValueError, match="BatchNormalization 'bn': expected an input of rank"):
        op.output_dims((4, 20, 7))
    x, params, _ = make_case((2, 3, 3, 4), CHANNELS_LAST)
    with pytest.raises(ValueError, match="BatchNormalization 'bn': .* flattened"):
        OpHarness([FlattenOp("flat"), BatchNormOp("bn")], x, params)


@pytest.fixture(scope="module")
def keras3():
    os.environ["KERAS_BACKEND"] = "jax"
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip(f"keras was imported with the {keras.backend.backend()} backend")
    return keras


@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("data_format", FORMATS)
def test_against_keras3(keras3, data_format, shape, center, scale):
    """Same input and weights: kiln's training and inference outputs, the updated moving
    statistics and the frozen layer's output equal Keras 3's BatchNormalization."""
    shape = SHAPES[shape]
    x, params, _ = make_case(shape, data_format, center, scale, seed=12)
    axis = channel_axis(x.ndim, data_format)
    layer = keras3.layers.BatchNormalization(axis=axis, momentum=0.9, epsilon=1e-3,
                                             center=center, scale=scale)
    layer.build(x.shape)
    layer.set_weights([params[name] for name in ("bn/gamma", "bn/beta", *STATE)
                       if name in params])
    want_train = np.asarray(layer(x, training=True))
    want_moving = [np.asarray(v) for v in (layer.moving_mean, layer.moving_variance)]
    layer.set_weights([params[name] for name in ("bn/gamma", "bn/beta", *STATE)
                       if name in params])
    want_infer = np.asarray(layer(x, training=False))
    layer.trainable = False
    want_frozen = np.asarray(layer(x, training=True))

    op = BatchNormOp("bn", epsilon=1e-3, momentum=0.9, center=center, scale=scale)
    training = OpHarness(op, x, params, data_format)
    np.testing.assert_allclose(training.forward(), want_train, rtol=1e-5, atol=1e-5)
    for name, want in zip(STATE, want_moving, strict=True):
        np.testing.assert_allclose(training.get_param(name), want, rtol=1e-6, atol=1e-6)
    inference = OpHarness(op, x, params, data_format, training=False)
    np.testing.assert_allclose(inference.forward(), want_infer, rtol=1e-5, atol=1e-5)
    op.frozen = True
    frozen = OpHarness(op, x, params, data_format)
    np.testing.assert_allclose(frozen.forward(), want_frozen, rtol=1e-5, atol=1e-5)
