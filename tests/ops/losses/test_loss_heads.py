"""Every loss head against real Keras 3 (the loss object on the same y_true / y_pred and
sample weights) and its gradient against central differences of its own loss.

Cases name the loss on both APIs (`K` is kiln.keras or keras), the kind of labels and
predictions, and whether the head applies the softmax / sigmoid itself (fused): then Keras is
given softmax(z) / sigmoid(z) and the head z.
"""

import os
import sys

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_harness import HeadHarness  # noqa: E402

from kiln import keras as kk  # noqa: E402

N, K = 6, 4


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def data(kind, rng):
    """(labels, head inputs, Keras y_pred transform)."""
    z = rng.normal(0, 1.5, (N, K)).astype(np.float32)
    if kind == "onehot_probabilities":
        return np.eye(K, dtype=np.float32)[rng.integers(0, K, N)], \
            rng.uniform(0.05, 1.0, (N, K)).astype(np.float32)
    if kind == "onehot":
        return np.eye(K, dtype=np.float32)[rng.integers(0, K, N)], z
    if kind == "soft":
        return rng.dirichlet(np.ones(K), N).astype(np.float32), z
    if kind == "ids":
        return rng.integers(0, K, N).astype(np.float32), z
    if kind == "ids_probabilities":
        return rng.integers(0, K, N).astype(np.float32), \
            rng.uniform(0.05, 1.0, (N, K)).astype(np.float32)
    if kind == "binary":
        return (rng.random((N, K)) > 0.5).astype(np.float32), z
    if kind == "binary_probabilities":
        return (rng.random((N, K)) > 0.5).astype(np.float32), \
            rng.uniform(0.05, 0.95, (N, K)).astype(np.float32)
    if kind == "regression":  # predictions kept away from the targets (kinks of |.|)
        y = rng.normal(0, 1, (N, K)).astype(np.float32)
        gap = rng.uniform(0.05, 2.0, (N, K)) * rng.choice([-1, 1], (N, K))
        return y, (y + gap).astype(np.float32)
    if kind == "positive":
        return rng.uniform(0.1, 3, (N, K)).astype(np.float32), \
            rng.uniform(0.1, 3, (N, K)).astype(np.float32)
    if kind == "distribution":
        return rng.dirichlet(np.ones(K), N).astype(np.float32), \
            rng.uniform(0.05, 0.9, (N, K)).astype(np.float32)
    if kind in ("signs", "zero_one"):
        labels = rng.choice([-1.0, 1.0] if kind == "signs" else [0.0, 1.0], (N, K))
        p = rng.normal(0, 1.5, (N, K))
        p = np.where(np.abs(1 - np.where(kind == "signs", labels, 2 * labels - 1) * p) < 0.05,
                     p + 0.2, p)
        return labels.astype(np.float32), p.astype(np.float32)
    raise ValueError(kind)


# id: (loss on either API, data kind, fused activation or None)
CASES = {
    "cce_fused_softmax": (lambda K: K.losses.CategoricalCrossentropy(), "onehot", "softmax"),
    "cce_smoothing_fused": (lambda K: K.losses.CategoricalCrossentropy(label_smoothing=0.2),
                            "onehot", "softmax"),
    "cce_soft_labels_fused": (lambda K: K.losses.CategoricalCrossentropy(), "soft", "softmax"),
    "cce_from_logits": (lambda K: K.losses.CategoricalCrossentropy(from_logits=True),
                        "onehot", None),
    "cce_logits_smoothing": (lambda K: K.losses.CategoricalCrossentropy(
        from_logits=True, label_smoothing=0.1), "soft", None),
    "cce_probabilities": (lambda K: K.losses.CategoricalCrossentropy(), "onehot_probabilities",
                          None),
    "cce_function_string": (lambda K: K.losses.get("categorical_crossentropy"),
                            "onehot_probabilities", None),
    "scce_fused_softmax": (lambda K: K.losses.SparseCategoricalCrossentropy(), "ids",
                           "softmax"),
    "scce_from_logits": (lambda K: K.losses.SparseCategoricalCrossentropy(from_logits=True),
                         "ids", None),
    "scce_probabilities": (lambda K: K.losses.get("sparse_categorical_crossentropy"),
                           "ids_probabilities", None),
    "bce_fused_sigmoid": (lambda K: K.losses.BinaryCrossentropy(), "binary", "sigmoid"),
    "bce_from_logits": (lambda K: K.losses.BinaryCrossentropy(from_logits=True), "binary",
                        None),
    "bce_logits_smoothing": (lambda K: K.losses.BinaryCrossentropy(
        from_logits=True, label_smoothing=0.2), "binary", None),
    "bce_probabilities": (lambda K: K.losses.get("binary_crossentropy"),
                          "binary_probabilities", None),
    "mse": (lambda K: K.losses.get("mse"), "regression", None),
    "mse_class": (lambda K: K.losses.MeanSquaredError(), "regression", None),
    "mae": (lambda K: K.losses.get("mae"), "regression", None),
    "mape": (lambda K: K.losses.get("mape"), "regression", None),
    "msle": (lambda K: K.losses.get("msle"), "positive", None),
    "huber": (lambda K: K.losses.Huber(), "regression", None),
    "huber_delta": (lambda K: K.losses.Huber(delta=0.5), "regression", None),
    "log_cosh": (lambda K: K.losses.get("log_cosh"), "regression", None),
    "log_cosh_class": (lambda K: K.losses.LogCosh(), "regression", None),
    "hinge_signs": (lambda K: K.losses.Hinge(), "signs", None),
    "hinge_zero_one": (lambda K: K.losses.get("hinge"), "zero_one", None),
    "squared_hinge": (lambda K: K.losses.SquaredHinge(), "zero_one", None),
    "kl_divergence": (lambda K: K.losses.KLDivergence(), "distribution", None),
    "kld_string": (lambda K: K.losses.get("kld"), "distribution", None),
    "poisson": (lambda K: K.losses.Poisson(), "positive", None),
    "cosine_similarity": (lambda K: K.losses.CosineSimilarity(), "regression", None),
}
# Keras 2 spellings kiln accepts, and the Keras 3 loss they mean
KERAS2_ALIASES = {"logcosh": "log_cosh", "kullback_leibler_divergence": "kl_divergence",
                  "cosine_proximity": "cosine_similarity", "huber_loss": "huber",
                  "MSE": "mean_squared_error", "MAE": "mean_absolute_error",
                  "MAPE": "mean_absolute_percentage_error",
                  "MSLE": "mean_squared_logarithmic_error", "KLD": "kl_divergence"}


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def keras_value(keras, loss, labels, predictions, weights):
    if not isinstance(loss, keras.losses.Loss):  # keras.losses.get returns functions
        from keras.src.losses.losses import LossFunctionWrapper
        loss = LossFunctionWrapper(loss)
    return float(loss(labels, predictions, sample_weight=weights))


def keras_predictions(fused, inputs):
    if fused == "softmax":
        return softmax(inputs.astype(np.float64)).astype(np.float32)
    if fused == "sigmoid":
        return sigmoid(inputs.astype(np.float64)).astype(np.float32)
    return inputs


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_value_matches_keras_with_sample_weights(case, keras):
    make, kind, fused = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32)
    labels, inputs = data(kind, rng)
    weights = rng.uniform(0.0, 2.0, N).astype(np.float32)
    head = make(kk).engine_head()
    harness = HeadHarness(head, N, K, fused=fused is not None)
    predictions = keras_predictions(fused, inputs)
    for sample_weight in (None, weights):
        expected = keras_value(keras, make(keras), labels, predictions, sample_weight)
        got = harness.run(inputs, labels, sample_weight)
        assert got == pytest.approx(expected, rel=2e-5, abs=2e-6), (case, sample_weight)
        # and the numpy function kiln.keras offers users
        assert make(kk)(labels, predictions, sample_weight) == pytest.approx(
            expected, rel=2e-5, abs=2e-6)
    if fused is not None:  # the head's probabilities are the model's output
        np.testing.assert_allclose(harness.outputs, predictions, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_central_differences(case):
    make, kind, fused = CASES[case]
    rng = np.random.default_rng(abs(hash(case)) % 2**32 + 1)
    labels, inputs = data(kind, rng)
    weights = rng.uniform(0.5, 2.0, N).astype(np.float32)
    scale = 0.7  # a loss_weight scales the gradient
    harness = HeadHarness(make(kk).engine_head(), N, K, fused=fused is not None, scale=scale)
    harness.run(inputs, labels, weights)
    analytic = harness.grad.copy()
    numeric = harness.numeric_gradient(inputs, labels, weights) * scale
    np.testing.assert_allclose(analytic, numeric, rtol=2e-2,
                               atol=2e-3 * max(np.abs(numeric).max(), 1e-3))


@pytest.mark.parametrize("alias", sorted(KERAS2_ALIASES))
def test_keras2_alias_strings_compute_the_keras3_loss(alias, keras):
    rng = np.random.default_rng(7)
    kind = {"kl_divergence": "distribution", "mean_squared_logarithmic_error": "positive"}.get(
        KERAS2_ALIASES[alias], "regression")
    labels, inputs = data(kind, rng)
    head = kk.losses.get(alias).engine_head()
    expected = float(keras.losses.get(KERAS2_ALIASES[alias])(labels, inputs).mean())
    assert HeadHarness(head, N, K).run(inputs, labels) == pytest.approx(expected, rel=2e-5)


def test_evaluation_heads_compute_no_gradient():
    head = kk.losses.CategoricalCrossentropy().engine_head()
    harness = HeadHarness(head, N, K, fused=True, want_grad=False)
    labels, inputs = data("onehot", np.random.default_rng(3))
    assert harness.grad is None
    assert harness.run(inputs, labels) == pytest.approx(
        float(np.mean(kk.losses.categorical_crossentropy(labels, softmax(inputs)))), rel=1e-5)


def test_accuracy_counts_of_the_heads():
    """stats[1]: argmax hits (categorical, sparse) and mean threshold hits (binary)."""
    rng = np.random.default_rng(4)
    labels, z = data("onehot", rng)
    harness = HeadHarness(kk.losses.CategoricalCrossentropy().engine_head(), N, K, fused=True)
    harness.run(z, labels)
    assert harness.stats[1] == np.sum(z.argmax(1) == labels.argmax(1))
    ids = labels.argmax(1).astype(np.float32)
    harness = HeadHarness(kk.losses.SparseCategoricalCrossentropy().engine_head(), N, K,
                          fused=True)
    harness.run(z, ids)
    assert harness.stats[1] == np.sum(z.argmax(1) == ids)
    labels, z = data("binary", rng)
    for fused, shown in ((True, sigmoid(z)), (False, z)):  # logits: Keras compares z > 0.5
        loss = kk.losses.BinaryCrossentropy(from_logits=not fused)
        harness = HeadHarness(loss.engine_head(), N, K, fused=fused)
        harness.run(z, labels)
        assert harness.stats[1] == pytest.approx(np.sum(np.mean((shown > 0.5) == labels, 1)))


def test_saturated_softmax_loss_is_clipped_like_keras(keras):
    z = np.array([[0.0, 40.0, 0.0, 0.0], [60.0, 0.0, 0.0, 0.0]], np.float32)
    labels = np.eye(K, dtype=np.float32)[[0, 0]]
    head = kk.losses.CategoricalCrossentropy().engine_head()
    got = HeadHarness(head, 2, K, fused=True).run(z, labels)
    expected = float(keras.losses.CategoricalCrossentropy()(labels, softmax(z)))
    assert got == pytest.approx(expected, rel=1e-5)
