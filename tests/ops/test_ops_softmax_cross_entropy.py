"""kiln.ops.softmax_cross_entropy.SoftmaxCrossEntropyOp: loss/accuracy stats and the logits
gradient vs numpy (Keras 2 categorical_crossentropy with clipping epsilon 1e-7)."""

import numpy as np
import pytest
from op_checker import softmax_cross_entropy_reference

from kiln.binding.memory import Memory
from kiln.ops.softmax_cross_entropy import SoftmaxCrossEntropyOp
from kiln.ops.tensor import Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore
from kiln.plan.step_plan import plain_desc


class LossHarness:
    def __init__(self, n, k, epsilon=1e-7):
        self.builder = PlanBuilder(ParameterStore(), training=True)
        self.logits_memory = Memory(plain_desc((n, k), "channels_last"))
        self.logits = self.logits_memory.as_array().reshape(n, k)
        self.labels = np.zeros((n, k), np.float32)
        head = SoftmaxCrossEntropyOp("softmax", epsilon)
        self.probabilities, self.stats, grad = head.plan(
            self.builder, Tensor(self.logits_memory), self.labels, np.ones(n, np.float32),
            1.0, True, fused=True)
        self.grad = grad.as_array().reshape(n, k)
        self.builder.finish()

    def run(self, logits, labels):
        self.logits[...] = logits
        self.labels[...] = labels
        for call in self.builder.forward_calls + self.builder.backward_calls:
            call.run()
        return float(self.stats[0]), float(self.stats[1]) / len(labels)


def one_hot(rng, n, k):
    return np.eye(k, dtype=np.float32)[rng.integers(0, k, n)]


@pytest.mark.parametrize("n,k", [(8, 10), (1, 2), (33, 5)])
def test_loss_accuracy_probabilities_and_gradient(n, k):
    rng = np.random.default_rng(n * 100 + k)
    logits = rng.normal(0, 2, size=(n, k)).astype(np.float32)
    labels = one_hot(rng, n, k)
    harness = LossHarness(n, k)
    loss, accuracy = harness.run(logits, labels)
    p, expected_loss, expected_accuracy = softmax_cross_entropy_reference(
        logits.astype(np.float64), labels.astype(np.float64))
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    assert accuracy == pytest.approx(expected_accuracy)
    np.testing.assert_allclose(harness.probabilities, p, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(harness.grad, (p - labels) / n, rtol=1e-5, atol=1e-7)


def test_accuracy_counts_correct_rows():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.0, 1.0, 5.0], [4.0, 0.0, 1.0]],
                      np.float32)
    labels = np.eye(3, dtype=np.float32)[[0, 2, 2, 1]]
    loss, accuracy = LossHarness(4, 3).run(logits, labels)
    assert accuracy == pytest.approx(0.5)


def test_loss_clips_probabilities_like_keras():
    """A true class with probability below 1e-7 costs -log(1e-7) (Keras clips), and a sure
    correct prediction costs -log(1 - 1e-7), not 0."""
    logits = np.array([[0.0, 40.0, 0.0], [60.0, 0.0, 0.0]], np.float32)
    labels = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], np.float32)
    loss, accuracy = LossHarness(2, 3).run(logits, labels)
    expected = (-np.log(1e-7) - np.log(1 - 1e-7)) / 2
    _, reference_loss, _ = softmax_cross_entropy_reference(logits.astype(np.float64),
                                                           labels.astype(np.float64))
    assert reference_loss == pytest.approx(expected, rel=1e-6)
    assert loss == pytest.approx(expected, rel=1e-4)
    assert accuracy == 0.5


def test_clipped_probabilities_have_zero_slope_like_keras():
    """Keras 3 (JAX) differentiates its clip: a class whose probability is clipped adds no
    gradient, so a sample whose true class is below eps gives none (p * sum(y m) - y m)."""
    logits = np.array([[0.0, 40.0, 0.0], [1.0, 0.5, 0.0], [0.0, 30.0, 25.0]], np.float32)
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.3, 0.5]], np.float32)
    harness = LossHarness(3, 3)
    harness.run(logits, labels)
    p = harness.probabilities.astype(np.float64)
    inside = (p > 1e-7) & (p < 1 - 1e-7)
    kept = (labels * inside).sum(axis=1, keepdims=True)
    expected = (p * kept - labels * inside) / 3
    assert not inside[0, 0] and inside[1].all() and not inside[2, 0]
    np.testing.assert_array_equal(harness.grad[0], 0.0)
    np.testing.assert_allclose(harness.grad, expected, rtol=1e-5, atol=1e-9)


def test_loss_with_other_epsilon():
    logits = np.array([[0.0, 30.0]], np.float32)
    labels = np.array([[1.0, 0.0]], np.float32)
    loss, _ = LossHarness(1, 2, epsilon=1e-3).run(logits, labels)
    assert loss == pytest.approx(-np.log(1e-3), rel=1e-5)


def test_soft_labels_gradient_is_p_times_label_sum_minus_y_over_n():
    rng = np.random.default_rng(5)
    n, k = 6, 4
    logits = rng.normal(size=(n, k)).astype(np.float32)
    labels = rng.uniform(0, 1, size=(n, k)).astype(np.float32)  # rows do not sum to 1
    harness = LossHarness(n, k)
    loss, _ = harness.run(logits, labels)
    p, expected_loss, _ = softmax_cross_entropy_reference(logits.astype(np.float64),
                                                          labels.astype(np.float64))
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    expected = (p * labels.sum(axis=1, keepdims=True) - labels) / n
    np.testing.assert_allclose(harness.grad, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("soft", [False, True], ids=["one-hot", "soft-labels"])
def test_gradient_matches_central_differences_of_the_loss(soft):
    rng = np.random.default_rng(6)
    n, k = 5, 4
    logits = rng.normal(size=(n, k)).astype(np.float32)
    labels = (rng.dirichlet(np.ones(k), size=n).astype(np.float32) if soft
              else one_hot(rng, n, k))
    harness = LossHarness(n, k)
    harness.run(logits, labels)
    analytic = harness.grad.copy()
    eps = 1e-2
    for i in range(n):
        for j in range(k):
            plus, minus = logits.copy(), logits.copy()
            plus[i, j] += eps
            minus[i, j] -= eps
            numeric = (harness.run(plus, labels)[0] - harness.run(minus, labels)[0]) / (2 * eps)
            assert numeric == pytest.approx(analytic[i, j], abs=2e-4, rel=1e-2), (i, j)


def test_large_logits_are_stable():
    logits = np.array([[1000.0, 0.0, -1000.0], [-500.0, 500.0, 499.0]], np.float32)
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    harness = LossHarness(2, 3)
    loss, accuracy = harness.run(logits, labels)
    assert np.isfinite(loss) and np.all(np.isfinite(harness.grad))
    p, expected_loss, _ = softmax_cross_entropy_reference(logits.astype(np.float64),
                                                          labels.astype(np.float64))
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    np.testing.assert_allclose(harness.grad, (p - labels) / 2, atol=1e-6)
