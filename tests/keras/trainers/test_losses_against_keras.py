"""fit / evaluate with every kind of head against real Keras 3 (see fit_oracle.py): the same
history, weights after each epoch and evaluate results."""

import numpy as np
import pytest
from fit_oracle import check_fit_against_keras

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def dense_model(units, activation=None, hidden=5, features=6):
    def build(K):
        inputs = K.Input((features,))
        x = K.layers.Dense(hidden, activation="tanh")(inputs)
        return K.Model(inputs, K.layers.Dense(units, activation=activation)(x))
    return build


def one_hot(classes):
    return lambda rng, n: np.eye(classes, dtype=np.float32)[rng.integers(0, classes, n)]


def test_softmax_categorical_crossentropy_accuracy_and_top_k():
    check_fit_against_keras(
        dense_model(4, "softmax"),
        lambda K: dict(loss="categorical_crossentropy",
                       metrics=["accuracy", "top_k_categorical_accuracy"]),
        one_hot(4))


def test_linear_output_from_logits_with_label_smoothing():
    check_fit_against_keras(
        dense_model(4),
        lambda K: dict(loss=K.losses.CategoricalCrossentropy(from_logits=True,
                                                             label_smoothing=0.1),
                       metrics=["acc"]),
        one_hot(4), batch_size=4)


@pytest.mark.parametrize("label_shape", ["(N,)", "(N, 1)"])
def test_sparse_labels(label_shape):
    def labels(rng, n):
        ids = rng.integers(0, 3, n)
        return ids if label_shape == "(N,)" else ids.reshape(n, 1)
    check_fit_against_keras(
        dense_model(3, "softmax"),
        lambda K: dict(loss="sparse_categorical_crossentropy", metrics=["accuracy"]), labels)


def test_sparse_from_logits():
    check_fit_against_keras(
        dense_model(3),
        lambda K: dict(loss=K.losses.SparseCategoricalCrossentropy(from_logits=True),
                       metrics=["sparse_categorical_accuracy"]),
        lambda rng, n: rng.integers(0, 3, n))


def test_sigmoid_binary_crossentropy_multi_label():
    check_fit_against_keras(
        dense_model(3, "sigmoid"),
        lambda K: dict(loss="binary_crossentropy",
                       metrics=["binary_accuracy", "accuracy", K.metrics.AUC(),
                                K.metrics.Precision(), K.metrics.Recall()]),
        lambda rng, n: (rng.random((n, 3)) > 0.5).astype(np.float32))


def test_one_sigmoid_unit_from_logits():
    check_fit_against_keras(
        dense_model(1),
        lambda K: dict(loss=K.losses.BinaryCrossentropy(from_logits=True),
                       metrics=["accuracy"]),
        lambda rng, n: (rng.random((n, 1)) > 0.5).astype(np.float32))


@pytest.mark.parametrize("loss", ["mse", "mae", "huber", "log_cosh", "mean_squared_error"])
def test_regression_losses_and_metrics(loss):
    check_fit_against_keras(
        dense_model(2),
        lambda K: dict(loss=loss, metrics=["mae", K.metrics.RootMeanSquaredError(),
                                           K.metrics.MeanSquaredError()]),
        lambda rng, n: rng.normal(size=(n, 2)).astype(np.float32))


@pytest.mark.parametrize("loss,activation,labels", [
    ("mape", None, "positive"), ("msle", "softplus", "positive"), ("hinge", "tanh", "0/1"),
    ("squared_hinge", "tanh", "-1/1"), ("kld", "softmax", "distribution"),
    ("poisson", "softplus", "positive"), ("cosine_similarity", None, "normal")])
def test_the_other_losses_train_as_keras(loss, activation, labels):
    """The losses of the issue not trained above, by name, in fit and evaluate."""
    def make_y(rng, n):
        if labels == "positive":
            return rng.uniform(0.5, 2, (n, 3)).astype(np.float32)
        if labels == "distribution":
            return rng.dirichlet(np.ones(3), n).astype(np.float32)
        if labels == "normal":
            return rng.normal(size=(n, 3)).astype(np.float32)
        signs = (rng.random((n, 3)) > 0.5).astype(np.float32)  # hinges take 0/1 or -1/1
        return signs if labels == "0/1" else 2 * signs - 1
    # MAPE is in percent: its gradients are 100x the others', so SGD at 0.1 would jump across
    # the kink of |y - p| and turn float32 rounding into visible weight differences
    check_fit_against_keras(dense_model(3, activation), lambda K: dict(loss=loss), make_y,
                            batch_size=4, learning_rate=0.001 if loss == "mape" else 0.1)


def test_sample_weight_weights_the_loss_not_the_metrics():
    check_fit_against_keras(
        dense_model(3, "softmax"),
        lambda K: dict(loss="categorical_crossentropy", metrics=["accuracy"],
                       weighted_metrics=["accuracy"]),
        one_hot(3), batch_size=4, validation=False, compare_list=False,
        fit_args=lambda rng, n, y: dict(sample_weight=rng.uniform(0, 2, n).astype(np.float32)))


def test_class_weight():
    check_fit_against_keras(
        dense_model(3, "softmax"),
        lambda K: dict(loss="categorical_crossentropy", metrics=["accuracy"]),
        one_hot(3), batch_size=4,
        fit_args=lambda rng, n, y: dict(class_weight={0: 0.5, 1: 2.0, 2: 1.0}))


def test_user_metric_function():
    def mean_prediction(y_true, y_pred):
        return y_pred.mean(axis=-1)
    check_fit_against_keras(
        dense_model(3, "softmax"),
        lambda K: dict(loss="categorical_crossentropy", metrics=[mean_prediction]),
        one_hot(3), batch_size=4)


def test_two_outputs_with_loss_weights():
    def build(K):
        inputs = K.Input((6,))
        x = K.layers.Dense(5, activation="tanh")(inputs)
        classes = K.layers.Dense(3, activation="softmax", name="classes")(x)
        value = K.layers.Dense(1, name="value")(x)
        return K.Model(inputs, [classes, value])

    def labels(rng, n):
        return [np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)],
                rng.normal(size=(n, 1)).astype(np.float32)]

    check_fit_against_keras(
        build, lambda K: dict(loss=["categorical_crossentropy", "mse"], loss_weights=[1.0, 0.3],
                              metrics=[["accuracy"], ["mae"]]), labels)


def test_two_outputs_losses_by_name_dict():
    def build(K):
        inputs = K.Input((6,))
        x = K.layers.Dense(5, activation="tanh")(inputs)
        a = K.layers.Dense(2, activation="sigmoid", name="flags")(x)
        b = K.layers.Dense(3, name="scores")(x)
        return K.Model(inputs, [a, b])

    def labels(rng, n):
        return [(rng.random((n, 2)) > 0.5).astype(np.float32), rng.integers(0, 3, n)]

    check_fit_against_keras(
        build, lambda K: dict(
            loss={"flags": "binary_crossentropy",
                  "scores": K.losses.SparseCategoricalCrossentropy(from_logits=True)},
            loss_weights={"flags": 2.0, "scores": 0.5},
            metrics={"flags": ["accuracy"], "scores": ["accuracy"]}),
        labels, batch_size=4)


def test_two_outputs_with_one_sample_weight_array_each():
    def build(K):
        inputs = K.Input((6,))
        x = K.layers.Dense(5, activation="tanh")(inputs)
        return K.Model(inputs, [K.layers.Dense(3, activation="softmax", name="a")(x),
                                K.layers.Dense(2, name="b")(x)])

    def labels(rng, n):
        return [np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)],
                rng.normal(size=(n, 2)).astype(np.float32)]

    check_fit_against_keras(
        build, lambda K: dict(loss=["categorical_crossentropy", "mae"],
                              loss_weights=[0.5, 2.0]),
        labels, batch_size=4, validation=False,
        fit_args=lambda rng, n, y: dict(sample_weight=[
            rng.uniform(0, 2, n).astype(np.float32), rng.uniform(0, 2, n).astype(np.float32)]))


def test_dict_outputs_use_their_keys():
    """Keras names losses and metrics of a dict of outputs by its keys, not layer names."""
    def build(K):
        inputs = K.Input((6,))
        x = K.layers.Dense(5, activation="tanh")(inputs)
        return K.Model(inputs, {"zz": K.layers.Dense(3, activation="softmax", name="cls")(x),
                                "aa": K.layers.Dense(1, name="reg")(x)})

    def labels(rng, n):
        return {"zz": np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)],
                "aa": rng.normal(size=(n, 1)).astype(np.float32)}

    check_fit_against_keras(
        build, lambda K: dict(loss={"zz": "categorical_crossentropy", "aa": "mse"},
                              loss_weights={"zz": 1.0, "aa": 0.5},
                              metrics={"zz": ["accuracy"], "aa": ["mae"]}), labels)
