"""AlphaDropoutOp (a fused numba kernel): the exact affine transform of Keras 3's AlphaDropout
given the mask the kernel drew, the gradient through the same mask, the statistics it keeps for
a SELU-normalized input, fresh draws every step, and the identity in inference."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.ops.alpha_dropout import AlphaDropoutOp

ALPHA, SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def keras_alpha_dropout(x, kept, rate):
    """Keras 3's AlphaDropout.call(training=True), given its mask, in float64."""
    alpha_p = -ALPHA * SCALE
    a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * rate
    return a * (x * kept + alpha_p * (1 - kept)) + b, a


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_exact_affine_transform_and_gradient_given_the_mask(data_format, rate):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6, 6, 8)).astype(np.float32)
    if data_format == CHANNELS_FIRST:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    harness = OpHarness(AlphaDropoutOp("a", rate, seed=4), x, data_format=data_format)
    y = harness.forward()
    # the gradient of ones is a where kept, 0 where dropped: it reads back the mask
    ones_grad, _ = harness.backward(np.ones_like(x))
    kept = (ones_grad != 0).astype(np.float64)
    expected, a = keras_alpha_dropout(x.astype(np.float64), kept, rate)
    np.testing.assert_allclose(ones_grad, a * kept, rtol=1e-6)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    assert abs(1 - kept.mean() - rate) < 0.07
    dy = rng.normal(size=x.shape).astype(np.float32)
    grad, _ = harness.backward(dy)
    np.testing.assert_allclose(grad, dy * a * kept, rtol=1e-6, atol=1e-7)


def test_keeps_mean_and_variance_of_a_selu_normalized_input_and_draws_anew():
    x = np.random.default_rng(0).normal(size=(64, 2000)).astype(np.float32)
    harness = OpHarness(AlphaDropoutOp("a", 0.2, seed=1), x)
    first = harness.forward()
    assert abs(first.mean()) < 0.01 and abs(first.var() - 1) < 0.01
    dropped_value = np.float32(keras_alpha_dropout(0.0, 0.0, 0.2)[0])  # a * alpha_p + b
    assert abs(np.mean(np.isclose(first, dropped_value, rtol=1e-6)) - 0.2) < 0.005
    second = harness.forward()
    assert not np.array_equal(first, second)
    again = OpHarness(AlphaDropoutOp("a", 0.2, seed=1), x).forward()
    np.testing.assert_array_equal(again, first)  # the seed fixes the sequence


def test_identity_in_inference():
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    harness = OpHarness(AlphaDropoutOp("a", 0.5), x, training=False)
    np.testing.assert_array_equal(harness.forward(), x)
