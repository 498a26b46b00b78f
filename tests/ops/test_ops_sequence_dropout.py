"""kiln.ops.sequence_dropout.SequenceDropoutOp (recurrent layers' `dropout`): one mask per
sample and feature, the same at every time step, the kept fraction and scale, the backward
reusing the mask, a new mask each step, inference unchanged."""

import numpy as np
import pytest
from op_checker import OpHarness

from kiln.ops.sequence_dropout import SequenceDropoutOp

SHAPE = (256, 7, 96)  # (N, T, C): 24576 masks


def harness_for(rate, seed=3, training=True):
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=SHAPE).astype(np.float32)
    return OpHarness(SequenceDropoutOp("rnn", rate, seed=seed), x, training=training), x


@pytest.mark.parametrize("rate", [0.2, 0.5])
def test_one_mask_per_sample_and_feature_for_every_step(rate):
    harness, x = harness_for(rate)
    y = harness.forward()
    kept = y != 0
    # the same mask at every step
    assert np.all(kept == kept[:, :1, :])
    # the kept fraction: the binomial sigma over N * C masks is < 0.0033; allow 5 sigma
    assert abs(kept[:, 0, :].mean() - (1.0 - rate)) < 0.017
    scale = np.float32(1.0 / (1.0 - rate))
    np.testing.assert_allclose(y[kept], x[kept] * scale, rtol=1e-6)
    # samples draw different masks
    assert not np.all(kept[0] == kept[1])


def test_backward_uses_the_forward_mask():
    harness, x = harness_for(0.3)
    dy = np.random.default_rng(1).normal(size=x.shape).astype(np.float32)
    result = harness.run(x, dy)
    kept = result.output != 0
    np.testing.assert_allclose(result.input_grad, dy * kept / np.float32(0.7), rtol=1e-6)
    assert np.all(result.input_grad[~kept] == 0)


def test_each_step_draws_a_new_mask():
    harness, _ = harness_for(0.5)
    first, second = harness.forward() != 0, harness.forward() != 0
    assert 0.4 < np.mean(first != second) < 0.6


def test_inference_is_identity():
    harness, x = harness_for(0.5, training=False)
    np.testing.assert_array_equal(harness.forward(), x)
