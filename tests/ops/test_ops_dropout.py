"""kiln.ops.dropout.DropoutOp: mask statistics, scaling, backward mask reuse, seeding."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.dropout import (
    CHUNK,
    DropoutOp,
    dropout_forward_kernel,
    dropout_mask_bf16_kernel,
    keep_scratch,
    keep_threshold,
)

N_ELEMENTS = 128 * 1024


def harness_for(rate, seed, shape=(128, 1024), data_format=CHANNELS_LAST, training=True,
                x=None):
    if x is None:
        x = np.random.default_rng(0).uniform(0.5, 1.5, size=shape).astype(np.float32)
    return OpHarness(DropoutOp("drop", rate, seed=seed), x, data_format=data_format,
                     training=training), x


@pytest.mark.parametrize("rate", [0.1, 0.25, 0.5, 0.8])
def test_dropout_mask_fraction_and_scale(rate):
    harness, x = harness_for(rate, seed=123)
    y = harness.forward()
    kept = y != 0
    assert x.size >= 1e5
    # binomial standard deviation of the kept fraction is < 0.0016 here: allow 5 sigma
    assert abs(kept.mean() - (1.0 - rate)) < 0.008
    scale = np.float32(1.0 / (1.0 - rate))
    np.testing.assert_allclose(y[kept], x[kept] * scale, rtol=1e-6)
    # dropped positions are spread over the whole tensor (no block left fully kept/dropped)
    per_row = kept.mean(axis=1)
    assert per_row.min() > (1.0 - rate) - 0.1 and per_row.max() < (1.0 - rate) + 0.1


@pytest.mark.parametrize("rate", [0.25, 0.5])
def test_dropout_backward_uses_the_forward_mask(rate):
    harness, x = harness_for(rate, seed=7)
    dy = np.random.default_rng(1).normal(size=x.shape).astype(np.float32)
    result = harness.run(x, dy)
    kept = result.output != 0
    scale = np.float32(1.0 / (1.0 - rate))
    np.testing.assert_allclose(result.input_grad, dy * kept * scale, rtol=1e-6)
    assert np.all(result.input_grad[~kept] == 0)


def test_dropout_consecutive_steps_draw_different_masks():
    harness, x = harness_for(0.5, seed=99)
    first = harness.forward() != 0
    second = harness.forward() != 0
    third = harness.forward() != 0
    # independent masks with rate 0.5 disagree on about half of the positions
    for a, b in ((first, second), (second, third), (first, third)):
        assert 0.45 < np.mean(a != b) < 0.55
    assert abs(second.mean() - 0.5) < 0.008


def test_dropout_mask_is_uncorrelated_between_steps_and_positions():
    harness, x = harness_for(0.5, seed=5)
    a = (harness.forward() != 0).astype(np.float64).ravel()
    b = (harness.forward() != 0).astype(np.float64).ravel()
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.02
    assert abs(np.corrcoef(a[:-1], a[1:])[0, 1]) < 0.02  # neighbouring elements


def test_dropout_same_seed_reproduces_and_other_seed_differs():
    h1, x = harness_for(0.3, seed=2024)
    h2, _ = harness_for(0.3, seed=2024, x=x)
    h3, _ = harness_for(0.3, seed=2025, x=x)
    steps1 = [h1.forward() for _ in range(2)]
    steps2 = [h2.forward() for _ in range(2)]
    for a, b in zip(steps1, steps2):
        np.testing.assert_array_equal(a, b)
    other = h3.forward() != 0
    assert np.mean(other != (steps1[0] != 0)) > 0.3


def test_dropout_backward_after_second_step_uses_second_mask():
    harness, x = harness_for(0.5, seed=8)
    dy = np.ones_like(x)
    first = harness.run(x, dy)
    second = harness.run(x, dy)
    assert np.mean((first.output != 0) != (second.output != 0)) > 0.4
    np.testing.assert_array_equal(second.input_grad != 0, second.output != 0)


@pytest.mark.parametrize("rate", [0.0, 0.5])
def test_dropout_inference_is_identity(rate):
    harness, x = harness_for(rate, seed=1, training=False)
    np.testing.assert_array_equal(harness.forward(), x)
    np.testing.assert_array_equal(harness.forward(), x)
    assert harness.builder.forward_calls == []


def test_dropout_rate_zero_training_is_identity():
    harness, x = harness_for(0.0, seed=1)
    dy = np.random.default_rng(2).normal(size=x.shape).astype(np.float32)
    result = harness.run(x, dy)
    np.testing.assert_array_equal(result.output, x)
    np.testing.assert_array_equal(result.input_grad, dy)


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
def test_dropout_on_blocked_conv_output(data_format):
    """DropoutOp runs on the conv's own (possibly blocked, padded) layout; the Keras view of
    the result is still conv output * mask * scale, and backward masks the same positions."""
    rng = np.random.default_rng(3)
    shape = (4, 12, 12, 3) if data_format == CHANNELS_LAST else (4, 3, 12, 12)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.3, size=(3, 3, 3, 20)).astype(np.float32),
              "conv/bias": np.full(20, 0.5, np.float32)}
    conv = Conv2DOp("conv", 20, (3, 3), padding="same", activation="sigmoid")
    plain = OpHarness(conv, x, params, data_format)
    reference = plain.forward()
    harness = OpHarness([Conv2DOp("conv", 20, (3, 3), padding="same", activation="sigmoid"),
                         DropoutOp("drop", 0.4, seed=3)], x, params, data_format)
    dy = np.ones_like(reference)
    result = harness.run(x, dy)
    kept = result.output != 0
    assert abs(kept.mean() - 0.6) < 0.03
    np.testing.assert_allclose(result.output[kept], reference[kept] / 0.6, rtol=1e-5)
    # with dy = 1 the bias gradient is sum over kept positions of scale * sigmoid'
    s = reference
    expected_bias_grad = (kept * s * (1 - s) / 0.6).sum(
        axis=(0, 1, 2) if data_format == CHANNELS_LAST else (0, 2, 3))
    np.testing.assert_allclose(result.param_grads["conv/bias"], expected_bias_grad, rtol=1e-4)


def test_dropout_rejects_bad_rate():
    with pytest.raises(ValueError, match="rate must be in"):
        DropoutOp("d", 1.0)
    with pytest.raises(ValueError, match="rate must be in"):
        DropoutOp("d", -0.1)


def test_dropout_neighbouring_seeds_draw_unrelated_masks():
    h1, x = harness_for(0.5, seed=1)
    h2, _ = harness_for(0.5, seed=2, x=x)
    h1.forward()  # step 1 of the layer seeded 1
    second_step_seed_1 = h1.forward() != 0
    first_step_seed_2 = h2.forward() != 0
    assert np.mean(second_step_seed_1 != first_step_seed_2) > 0.3


def mix64(z):
    """splitmix64's finalizer in numpy (uint64 arithmetic wraps)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def reference_keeps(n, seed, step, rate):
    """The documented rule: element i is kept when 16-bit half i % 4 (low half first) of
    mix64((i // 4) ^ salt) >= round(rate * 2**16), salt = mix64(mix64(seed) + step) >> 32."""
    with np.errstate(over="ignore"):
        salt = mix64(mix64(np.array([seed], np.uint64)) + np.uint64(step)) >> np.uint64(32)
        i = np.arange(n, dtype=np.uint64)
        h = mix64((i // np.uint64(4)) ^ salt)
    half = (h >> (np.uint64(16) * (i % np.uint64(4)))) & np.uint64(0xFFFF)
    return (half >= round(rate * 65536)).astype(np.uint8)


@pytest.mark.parametrize("n", [3 * CHUNK + 7, 5, CHUNK])
@pytest.mark.parametrize("rate", [0.25, 0.1])
def test_dropout_kernels_draw_the_documented_mask(n, rate):
    x = np.random.default_rng(n).uniform(1, 2, n).astype(np.float32)
    y, mask = np.zeros_like(x), np.zeros(n, np.uint8)
    counter = np.array([77, 3], np.uint64)
    scale = np.float32(1 / (1 - rate))
    dropout_forward_kernel(x, y, mask, keep_threshold(rate), scale, counter, keep_scratch(CHUNK))
    expected = reference_keeps(n, 77, 3, rate)
    np.testing.assert_array_equal(mask, expected)
    np.testing.assert_array_equal(y, x * (scale * expected))
    assert counter[1] == 4
    # the bf16 path draws the same mask, as bf16 values 0 or 1.0 (bits 0x3F80)
    bits = np.zeros(n, np.uint16)
    dropout_mask_bf16_kernel(bits, keep_threshold(rate), np.uint16(0x3F80),
                             np.array([77, 3], np.uint64), keep_scratch(CHUNK),
                             np.zeros((keep_scratch(CHUNK).shape[0], CHUNK), np.uint8))
    np.testing.assert_array_equal(bits, expected * np.uint16(0x3F80))


def test_keep_threshold_is_rate_in_sixteen_bits():
    assert keep_threshold(0.25) == 16384
    assert keep_threshold(0.0) == 0
    assert keep_threshold(0.999999) == 65535  # never more than 16 bits
    assert abs(keep_threshold(0.1) / 65536 - 0.1) <= 2 ** -17
