"""The per-pixel cross-entropy kernels (categorical_rows.py: a oneDNN softmax, then one parallel
pass) against real Keras 3 on the same rows and sample weights, their gradient against central
differences, and their counts and outputs against the one-thread kernels of categorical.py
(the same cases as test_loss_heads.py)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_harness import HeadHarness  # noqa: E402
from test_loss_heads import CASES, K, N, data, keras_predictions, keras_value  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.ops.losses import CORRECT  # noqa: E402

CROSSENTROPIES = sorted(case for case in CASES if case.startswith(("cce", "scce")))


@pytest.mark.parametrize("case", CROSSENTROPIES)
def test_rows_match_keras_and_the_one_thread_kernels(case):
    keras = pytest.importorskip("keras")
    make, kind, fused = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    labels, inputs = data(kind, rng)
    weights = rng.uniform(0.0, 2.0, N).astype(np.float32)
    rows = HeadHarness(make(kk).engine_head(), N, K, fused=fused is not None, rows=True)
    serial = HeadHarness(make(kk).engine_head(), N, K, fused=fused is not None)
    predictions = keras_predictions(fused, inputs)
    for sample_weight in (None, weights):
        expected = keras_value(keras, make(keras), labels, predictions, sample_weight)
        assert rows.run(inputs, labels, sample_weight) == pytest.approx(
            expected, rel=2e-5, abs=2e-6), (case, sample_weight)
        serial.run(inputs, labels, sample_weight)
        assert rows.stats[CORRECT] == serial.stats[CORRECT]
        np.testing.assert_allclose(rows.outputs, serial.outputs, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(rows.grad, serial.grad, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("case", CROSSENTROPIES)
def test_rows_gradient_matches_central_differences(case):
    make, kind, fused = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32 + 1)
    labels, inputs = data(kind, rng)
    weights = rng.uniform(0.5, 2.0, N).astype(np.float32)
    scale = 0.7
    harness = HeadHarness(make(kk).engine_head(), N, K, fused=fused is not None, scale=scale,
                          rows=True)
    harness.run(inputs, labels, weights)
    analytic = harness.grad.copy()
    numeric = harness.numeric_gradient(inputs, labels, weights) * scale
    np.testing.assert_allclose(analytic, numeric, rtol=2e-2,
                               atol=2e-3 * max(np.abs(numeric).max(), 1e-3))


def test_from_logits_stays_finite_where_a_probability_underflows():
    # log-softmax from the largest probability: a logit 200 below the others gives p = 0 in
    # float32, and its loss is still the exact 200-odd, as Keras' log_softmax
    head = kk.losses.SparseCategoricalCrossentropy(from_logits=True).engine_head()
    harness = HeadHarness(head, 1, 3, rows=True)
    z = np.array([[100.0, 0.0, -100.0]], np.float32)
    expected = 200.0 + np.log1p(np.exp(-100.0) + np.exp(-200.0))
    assert harness.run(z, np.array([2.0], np.float32)) == pytest.approx(expected, rel=1e-6)
