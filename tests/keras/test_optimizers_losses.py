"""kiln.keras losses, metrics, the training gradient of a one-layer softmax model and
to_categorical. (The optimizers are tested in tests/keras/optimizers/.)"""

import math

import numpy as np
import pytest

from kiln import keras
from kiln.keras import backend, losses, metrics
from kiln.keras.layers import Dense
from kiln.keras.optimizers import SGD
from kiln.keras.utils import to_categorical

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


# -- the training gradient ----------------------------------------------------------------------
def numpy_gradients(x, y, kernel, bias):
    """d(mean categorical crossentropy of softmax(x @ kernel + bias)) / d(kernel, bias)."""
    logits = x @ kernel + bias
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    grad_logits = (e / e.sum(axis=1, keepdims=True) - y) / len(x)
    return [x.T @ grad_logits, grad_logits.sum(axis=0)]


def test_training_gradient_is_softmax_minus_labels_over_n():
    """SGD with lr=1 moves the weights by exactly minus the gradient."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 4)).astype(np.float32)
    y = to_categorical([0, 1, 2, 0, 1, 2, 2], 3)
    model = keras.Sequential([Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=1.0))
    start = model.get_weights()
    model.fit(x, y, batch_size=7, epochs=1, verbose=0)
    expected = numpy_gradients(x.astype(np.float64), y, *[w.astype(np.float64) for w in start])
    for before, after, grad in zip(start, model.get_weights(), expected):
        np.testing.assert_allclose(before - after, grad, atol=1e-6)


# -- losses and metrics -----------------------------------------------------------------------
def test_categorical_crossentropy_hand_computed_values():
    y = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1], [0.5, 0.5, 0]])
    p = np.array([[0.1, 0.8, 0.1], [0.25, 0.25, 0.5], [0.2, 0.3, 0.5], [0.5, 0.25, 0.25]])
    expected = [-math.log(0.8), -math.log(0.25), -math.log(0.5),
                -(0.5 * math.log(0.5) + 0.5 * math.log(0.25))]
    np.testing.assert_allclose(losses.categorical_crossentropy(y, p), expected, rtol=1e-12)
    assert losses.CategoricalCrossentropy()(y, p) == pytest.approx(np.mean(expected))


def test_categorical_crossentropy_normalizes_and_clips_like_keras():
    # Unnormalized predictions are divided by their sum first.
    assert losses.categorical_crossentropy([0, 1, 0], [1.0, 2.0, 1.0]) == pytest.approx(
        -math.log(0.5))
    # A zero probability on the true class is clipped to epsilon (1e-7): loss -log(1e-7).
    assert losses.categorical_crossentropy([0, 1, 0], [1.0, 0.0, 0.0]) == pytest.approx(
        -math.log(1e-7))
    assert -math.log(1e-7) == pytest.approx(16.1181, abs=1e-4)
    # A perfect prediction is clipped at 1 - epsilon.
    assert losses.categorical_crossentropy([1, 0], [1.0, 0.0]) == pytest.approx(
        -math.log(1 - 1e-7))
    backend.set_epsilon(1e-3)
    assert losses.categorical_crossentropy([0, 1], [1.0, 0.0]) == pytest.approx(-math.log(1e-3))


def test_categorical_crossentropy_is_per_sample():
    y = to_categorical([0, 1], 2)
    values = losses.categorical_crossentropy(y, [[0.9, 0.1], [0.4, 0.6]])
    assert values.shape == (2,)
    np.testing.assert_allclose(values, [-math.log(0.9), -math.log(0.6)])


def test_loss_lookup_and_from_logits():
    assert losses.get("categorical_crossentropy").name == "categorical_crossentropy"
    assert losses.get(losses.categorical_crossentropy).fn is losses.categorical_crossentropy
    loss = losses.CategoricalCrossentropy(from_logits=True)
    assert losses.get(loss) is loss and loss.engine_head().from_logits
    with pytest.raises(ValueError, match="argument loss.*'binary_crossentropy_typo'"):
        losses.get("binary_crossentropy_typo")


def test_categorical_accuracy():
    y = to_categorical([0, 1, 2, 1], 3)
    p = np.array([[0.8, 0.1, 0.1], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8], [0.2, 0.7, 0.1]])
    np.testing.assert_array_equal(metrics.categorical_accuracy(y, p), [1, 0, 1, 1])
    assert [metrics.get(m).name for m in ("categorical_accuracy", metrics.categorical_accuracy)
            ] == ["categorical_accuracy", "categorical_accuracy"]


# -- to_categorical ---------------------------------------------------------------------------
def test_to_categorical_basics():
    np.testing.assert_array_equal(to_categorical([2, 0, 1]),
                                  [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    out = to_categorical(np.array([[3], [1]], np.uint8), 5)
    assert out.shape == (2, 5) and out.dtype == np.float32
    np.testing.assert_array_equal(out, [[0, 0, 0, 1, 0], [0, 1, 0, 0, 0]])
    np.testing.assert_array_equal(to_categorical(np.array([1.0, 0.0])), [[0, 1], [1, 0]])
    assert to_categorical([[0, 1], [1, 1]], 2).shape == (2, 2, 2)
    assert to_categorical([1], 2, dtype="int64").dtype == np.int64
    assert to_categorical([], 3).shape == (0, 3)
    labels = np.random.default_rng(0).integers(0, 10, 1000)
    assert np.array_equal(np.argmax(to_categorical(labels, 10), axis=1), labels)


@pytest.mark.parametrize("y,num_classes,pattern", [
    ([0, 1.5], None, "integer class labels"), ([0, -1], 3, r"\[0, 3\)"),
    ([0, 3], 3, r"\[0, 3\)"), ([0, 1], 0, "num_classes"), (["a", "b"], None, "integer"),
    ([], None, "num_classes")])
def test_to_categorical_errors(y, num_classes, pattern):
    with pytest.raises(ValueError, match=pattern):
        to_categorical(y, num_classes)
