"""kiln.keras.metrics against Keras 3's metric objects fed the same batches (with and without
sample weights), both through `update_state` on numpy arrays and through the kernels a plan
runs in the step (`plan_update`), and 'accuracy' / 'acc' resolved as Keras resolves them."""

import os
from types import SimpleNamespace

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.plan.builder import PlanBuilder  # noqa: E402
from kiln.plan.parameters import ParameterStore  # noqa: E402

N, K, BATCHES = 8, 4, 3


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def batches(kind, seed):
    rng = np.random.default_rng(seed)
    for _ in range(BATCHES):
        weights = rng.uniform(0, 2, N).astype(np.float32)
        if kind == "categorical":
            yield (np.eye(K, dtype=np.float32)[rng.integers(0, K, N)],
                   rng.dirichlet(np.ones(K), N).astype(np.float32), weights)
        elif kind == "sparse":
            yield (rng.integers(0, K, N).astype(np.float32),
                   rng.dirichlet(np.ones(K), N).astype(np.float32), weights)
        elif kind == "binary":
            yield ((rng.random((N, K)) > 0.5).astype(np.float32),
                   rng.random((N, K)).astype(np.float32), weights)
        elif kind == "binary_rounded":  # predictions that sometimes equal the labels
            yield ((rng.random((N, K)) > 0.5).astype(np.float32),
                   (rng.random((N, K)) > 0.5).astype(np.float32), weights)
        else:
            yield (rng.normal(size=(N, K)).astype(np.float32),
                   rng.normal(size=(N, K)).astype(np.float32), weights)


# id: (metric on either API, data kind)
CASES = {
    "categorical_accuracy": (lambda K: K.metrics.CategoricalAccuracy(), "categorical"),
    "sparse_categorical_accuracy": (lambda K: K.metrics.SparseCategoricalAccuracy(), "sparse"),
    "binary_accuracy": (lambda K: K.metrics.BinaryAccuracy(), "binary"),
    "binary_accuracy_threshold": (lambda K: K.metrics.BinaryAccuracy(threshold=0.3), "binary"),
    "top_k": (lambda K: K.metrics.TopKCategoricalAccuracy(k=2), "categorical"),
    "sparse_top_k": (lambda K: K.metrics.SparseTopKCategoricalAccuracy(k=2), "sparse"),
    "mse": (lambda K: K.metrics.MeanSquaredError(), "regression"),
    "mae": (lambda K: K.metrics.MeanAbsoluteError(), "regression"),
    "rmse": (lambda K: K.metrics.RootMeanSquaredError(), "regression"),
    "precision": (lambda K: K.metrics.Precision(), "binary"),
    "recall": (lambda K: K.metrics.Recall(), "binary"),
    "precision_thresholds": (lambda K: K.metrics.Precision(thresholds=[0.2, 0.7]), "binary"),
    "auc": (lambda K: K.metrics.AUC(), "binary"),
    "auc_pr_minoring": (lambda K: K.metrics.AUC(curve="PR", summation_method="minoring"),
                        "binary"),
    "auc_pr_interpolation": (lambda K: K.metrics.AUC(curve="PR"), "binary"),
    "binary_crossentropy": (lambda K: K.metrics.BinaryCrossentropy(), "binary"),
    "categorical_crossentropy": (lambda K: K.metrics.CategoricalCrossentropy(
        label_smoothing=0.1), "categorical"),
    "sparse_categorical_crossentropy": (lambda K: K.metrics.SparseCategoricalCrossentropy(),
                                        "sparse"),
    "kl_divergence": (lambda K: K.metrics.KLDivergence(), "categorical"),
    "poisson": (lambda K: K.metrics.Poisson(), "binary"),
    "hinge": (lambda K: K.metrics.Hinge(), "binary"),
    "squared_hinge": (lambda K: K.metrics.SquaredHinge(), "binary"),
    "mape": (lambda K: K.metrics.MeanAbsolutePercentageError(), "regression"),
    "msle": (lambda K: K.metrics.MeanSquaredLogarithmicError(), "binary"),
    "logcosh": (lambda K: K.metrics.LogCoshError(), "regression"),
    "cosine_similarity": (lambda K: K.metrics.CosineSimilarity(), "regression"),
    "accuracy_exact": (lambda K: K.metrics.Accuracy(), "binary_rounded"),
    "auc_roc_majoring_50": (lambda K: K.metrics.AUC(num_thresholds=50,
                                                    summation_method="majoring"), "binary"),
}


def keras_result(keras, make, kind, seed, weighted):
    metric = make(keras)
    for y, p, w in batches(kind, seed):
        metric.update_state(y, p, sample_weight=w if weighted else None)
    return np.asarray(metric.result(), dtype=np.float64)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_update_state_matches_keras(case, weighted, keras):
    make, kind = CASES[case]
    metric = make(kk)
    for y, p, w in batches(kind, 1):
        metric.update_state(y, p, sample_weight=w if weighted else None)
    np.testing.assert_allclose(metric.result(), keras_result(keras, make, kind, 1, weighted),
                               rtol=1e-5, atol=1e-6)
    metric.reset_state()
    for y, p, w in batches(kind, 2):
        metric.update_state(y, p, sample_weight=w if weighted else None)
    np.testing.assert_allclose(metric.result(), keras_result(keras, make, kind, 2, weighted),
                               rtol=1e-5, atol=1e-6, err_msg="after reset_state")


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_kernels_match_keras(case, weighted, keras):
    make, kind = CASES[case]
    metric = make(kk)
    builder = PlanBuilder(ParameterStore(), training=False)
    labels = np.zeros((N,) if kind == "sparse" else (N, K), np.float32)
    view = SimpleNamespace(outputs=np.zeros((N, K), np.float32), labels=labels,
                           label_rows=labels, weights=np.ones(N, np.float32),
                           ones=np.ones(N, np.float32),
                           stats=np.zeros(2),
                           loss=SimpleNamespace(head=SimpleNamespace(
                               sparse=kind == "sparse", accuracy=None)))
    update = metric.plan_update(builder, view, view.weights if weighted else view.ones)
    for y, p, w in batches(kind, 3):
        view.labels[...], view.outputs[...], view.weights[...] = y, p, w
        for call in builder.forward_calls:
            call.run()
        if update is not None:
            update()
    np.testing.assert_allclose(metric.result(), keras_result(keras, make, kind, 3, weighted),
                               rtol=1e-5, atol=1e-6)


def test_mean_and_mean_metric_wrapper(keras):
    values = [np.array([1.0, 3.0, 5.0, 7.0]), np.array([2.0, 4.0])]
    weights = [np.array([1.0, 1.0, 0.0, 0.5]), np.array([2.0, 0.0])]
    ours, theirs = kk.metrics.Mean(), keras.metrics.Mean()
    for v, w in zip(values, weights, strict=True):
        ours.update_state(v, w)
        theirs.update_state(v, w)
    assert ours.result() == pytest.approx(float(theirs.result()))

    def half_sum(y_true, y_pred):
        return 0.5 * (y_true + y_pred).sum(axis=-1)
    y, p, w = next(batches("regression", 4))
    ours = kk.metrics.MeanMetricWrapper(half_sum, name="half")
    theirs = keras.metrics.MeanMetricWrapper(half_sum, name="half")
    ours.update_state(y, p, w)
    theirs.update_state(y, p, w)
    assert ours.result() == pytest.approx(float(theirs.result()), rel=1e-5)


@pytest.mark.parametrize("loss,width,expected", [
    ("categorical_crossentropy", 3, "CategoricalAccuracy"),
    ("sparse_categorical_crossentropy", 3, "SparseCategoricalAccuracy"),
    ("binary_crossentropy", 1, "BinaryAccuracy"),
    ("binary_crossentropy", 3, "CategoricalAccuracy"),  # Keras looks at shapes only
    ("mse", 1, "BinaryAccuracy")])
@pytest.mark.parametrize("spelling", ["accuracy", "acc"])
def test_accuracy_resolves_as_keras_and_keeps_the_written_name(loss, width, expected, spelling):
    model = kk.Sequential([kk.layers.Dense(width, input_shape=(4,))])
    model.compile(loss=loss, optimizer="sgd", metrics=[spelling, "mse"])
    entries = model._compile_metrics.entries
    assert [(name, type(metric).__name__) for name, metric, _, _ in entries] == [
        (spelling, expected), ("mse", "MeanSquaredError")]


def test_an_accuracy_that_does_not_fit_the_labels_is_refused():
    model = kk.Sequential([kk.layers.Dense(3, input_shape=(4,))])
    model.compile(loss=kk.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer="sgd", metrics=["categorical_accuracy"])
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"metric 'categorical_accuracy': the loss of its "
                                         r"output takes class ids; use 'accuracy'"):
        model.fit(x, np.array([0, 1, 2, 0]), verbose=0)
