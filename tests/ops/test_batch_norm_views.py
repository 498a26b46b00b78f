"""kiln.ops.batch_norm_views.ChannelViewBatchNormOp (BatchNormalization on rank-3 and rank-5
tensors, channel axis last or 1) against a float64 numpy reference and central differences."""

import numpy as np
import pytest
from op_checker import OpHarness, check_op

from kiln.ops.batch_norm import BatchNormOp
from kiln.ops.batch_norm_views import ChannelViewBatchNormOp

CASES = {"sequence-last": ((3, 5, 4), -1), "sequence-first": ((3, 4, 5), 1),
         "volume-last": ((2, 2, 3, 2, 4), -1), "volume-first": ((2, 4, 2, 3, 2), 1)}


def reference(x, params, axis, training, dy=None, epsilon=1e-3):
    """Keras BatchNormalization over every axis but `axis`: y, or (y, dx, dgamma, dbeta)."""
    axis = axis % x.ndim
    axes = tuple(i for i in range(x.ndim) if i != axis)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]

    def per_channel(v):
        return np.asarray(v, dtype=np.float64).reshape(shape)

    if training:
        mean, variance = x.mean(axes), x.var(axes)
    else:
        mean, variance = params["bn/moving_mean"], params["bn/moving_variance"]
    gamma, beta = per_channel(params["bn/gamma"]), per_channel(params["bn/beta"])
    inv = 1.0 / np.sqrt(per_channel(variance) + epsilon)
    xhat = (x - per_channel(mean)) * inv
    y = gamma * xhat + beta
    if dy is None:
        return y
    if training:
        dx = gamma * inv * (dy - dy.mean(axes, keepdims=True)
                            - xhat * (dy * xhat).mean(axes, keepdims=True))
    else:
        dx = gamma * inv * dy
    return y, dx, (dy * xhat).sum(axes), dy.sum(axes)


def make_case(name, frozen=False, momentum=0.9):
    """(op, x, params, dy, axis): per-channel offsets in x, so centering matters."""
    shape, axis = CASES[name]
    rng = np.random.default_rng(0)
    channels = shape[axis]
    per_channel = [1] * len(shape)
    per_channel[axis] = channels
    x = (rng.normal(size=shape) + rng.normal(0, 2, channels).reshape(per_channel))
    params = {"bn/gamma": rng.normal(1, 0.3, channels), "bn/beta": rng.normal(0, 0.5, channels),
              "bn/moving_mean": rng.normal(0, 0.5, channels),
              "bn/moving_variance": rng.uniform(0.5, 2.0, channels)}
    bn = BatchNormOp("bn", momentum=momentum)
    bn.frozen = frozen
    op = ChannelViewBatchNormOp(bn, axis, len(shape))
    return op, x.astype(np.float32), params, rng.normal(size=shape), axis


def check_case(name, frozen=False):
    op, x, params, dy, axis = make_case(name, frozen)

    def grads(x64, p64, dy64):
        _, dx, dgamma, dbeta = reference(x64, p64, axis, not frozen, dy64)
        return dx, {"bn/gamma": dgamma, "bn/beta": dbeta}

    check_op(op, x, params, dy, lambda x64, p64: reference(x64, p64, axis, not frozen),
             reference_grads=grads, rtol=1e-4, atol=1e-4, grad_rtol=1e-3, grad_atol=1e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_batch_statistics_over_every_axis_but_the_channels(name):
    check_case(name)


@pytest.mark.parametrize("name", ["sequence-last", "volume-first"])
def test_frozen_uses_the_moving_statistics(name):
    check_case(name, frozen=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_moving_statistics_follow_keras_formula(name):
    """moving = moving * momentum + batch * (1 - momentum) per step, as Keras."""
    op, x, params, _, axis = make_case(name)
    harness = OpHarness(op, x, {k: v.astype(np.float32) for k, v in params.items()})
    axes = tuple(i for i in range(x.ndim) if i != axis % x.ndim)
    x64 = x.astype(np.float64)
    expected = {k: params[k].astype(np.float32).astype(np.float64)
                for k in ("bn/moving_mean", "bn/moving_variance")}
    for _ in range(2):
        harness.forward()
        for key, batch in (("bn/moving_mean", x64.mean(axes)),
                           ("bn/moving_variance", x64.var(axes))):
            expected[key] = expected[key] * 0.9 + batch * 0.1
            np.testing.assert_allclose(harness.get_param(key), expected[key], rtol=2e-6,
                                       atol=1e-6, err_msg=key)


def test_shape_rules():
    op = ChannelViewBatchNormOp(BatchNormOp("bn"), -1, 5)
    assert op.output_dims((None, 2, 3, 4, 5)) == (None, 2, 3, 4, 5)
    assert op.parameter_dims((None, 2, 3, 4, 5))["gamma"][0] == (5,)
    assert op.state_dims((None, 5, 3, 4, 2))["moving_mean"][0] == (2,)
    with pytest.raises(ValueError, match="BatchNormalization 'bn'.*rank"):
        ChannelViewBatchNormOp(BatchNormOp("bn"), -1, 4)
    with pytest.raises(ValueError, match="BatchNormalization 'bn'.*3D"):
        ChannelViewBatchNormOp(BatchNormOp("bn"), -1, 3).output_dims((4, 5))
