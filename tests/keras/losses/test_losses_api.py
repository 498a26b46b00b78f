"""kiln.keras.losses as users see it: the numpy functions equal Keras 3's, the classes carry
Keras's names and arguments, `get` knows the Keras 3 and Keras 2 spellings, and reductions and
sample weights reduce as Keras does."""

import os

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

FUNCTIONS = ["categorical_crossentropy", "binary_crossentropy", "mean_squared_error",
             "mean_absolute_error", "mean_absolute_percentage_error",
             "mean_squared_logarithmic_error", "huber", "log_cosh", "hinge", "squared_hinge",
             "kl_divergence", "poisson", "cosine_similarity"]


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def sample(rng, name):
    y = rng.uniform(0.05, 1, (5, 3)).astype(np.float32)
    p = rng.uniform(0.05, 1, (5, 3)).astype(np.float32)
    if name in ("binary_crossentropy", "hinge", "squared_hinge"):
        y = (y > 0.5).astype(np.float32)
    if name == "categorical_crossentropy":
        y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 5)]
    return y, p


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_equal_keras(name, keras):
    y, p = sample(np.random.default_rng(1), name)
    expected = np.asarray(getattr(keras.losses, name)(y, p))
    np.testing.assert_allclose(getattr(kk.losses, name)(y, p), expected, rtol=2e-6, atol=1e-7)


def test_sparse_function_takes_ids_of_shape_n_and_n_1(keras):
    p = np.random.default_rng(2).dirichlet(np.ones(4), 5).astype(np.float32)
    ids = np.array([0, 3, 1, 2, 2])
    expected = np.asarray(keras.losses.sparse_categorical_crossentropy(ids, p))
    for labels in (ids, ids.reshape(-1, 1)):
        np.testing.assert_allclose(kk.losses.sparse_categorical_crossentropy(labels, p),
                                   expected, rtol=2e-6)


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "mean",
                                       "mean_with_sample_weight", None])
def test_reductions_and_sample_weights(reduction, keras):
    rng = np.random.default_rng(3)
    y, p = rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    w = rng.uniform(0, 2, 6)
    ours = kk.losses.MeanSquaredError(reduction=reduction)(y, p, sample_weight=w)
    theirs = keras.losses.MeanSquaredError(reduction=reduction)(y, p, sample_weight=w)
    np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-5)


@pytest.mark.parametrize("cls,arguments", [
    ("CategoricalCrossentropy", dict(from_logits=True, label_smoothing=0.1)),
    ("SparseCategoricalCrossentropy", dict(from_logits=True)),
    ("BinaryCrossentropy", dict(label_smoothing=0.2)), ("Huber", dict(delta=0.5)),
    ("MeanSquaredError", {}), ("MeanAbsoluteError", {}), ("MeanAbsolutePercentageError", {}),
    ("MeanSquaredLogarithmicError", {}), ("LogCosh", {}), ("Hinge", {}),
    ("SquaredHinge", {}), ("KLDivergence", {}), ("Poisson", {}), ("CosineSimilarity", {})])
def test_classes_have_keras_names_and_arguments(cls, arguments, keras):
    ours, theirs = getattr(kk.losses, cls)(**arguments), getattr(keras.losses, cls)(**arguments)
    assert ours.name == theirs.name
    for key, value in arguments.items():
        assert getattr(ours, key) == value
    config = ours.get_config()
    assert config["name"] == theirs.name and config["reduction"] == "sum_over_batch_size"


@pytest.mark.parametrize("name", ["mse", "MSE", "mae", "mape", "msle", "kld", "KLD", "huber",
                                  "log_cosh", "logcosh", "kullback_leibler_divergence",
                                  "cosine_proximity", "huber_loss", "hinge", "poisson",
                                  "categorical_crossentropy", "binary_crossentropy",
                                  "sparse_categorical_crossentropy", "Huber",
                                  "MeanSquaredError", "CategoricalCrossentropy"])
def test_get_knows_keras_3_and_keras_2_names(name):
    loss = kk.losses.get(name)
    assert isinstance(loss, kk.losses.Loss) and loss.engine_head() is not None


def test_get_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"argument loss .*'crossentropy_typo'"):
        kk.losses.get("crossentropy_typo")
    with pytest.raises(ValueError, match=r"the class CategoricalCrossentropy .*"
                                         r"CategoricalCrossentropy\(\)"):
        kk.losses.get(kk.losses.CategoricalCrossentropy)
    with pytest.raises(ValueError, match="reduction"):
        kk.losses.MeanSquaredError(reduction="average")
    with pytest.raises(TypeError, match="Huber: unexpected keyword argument"):
        kk.losses.Huber(alpha=1.0)
