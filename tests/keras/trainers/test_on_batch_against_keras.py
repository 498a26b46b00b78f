"""train_on_batch and test_on_batch report the loss and metrics of their own batch, as Keras 3
does (it resets the metrics at each call), from the same weights."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
import keras_oracle  # noqa: E402  (sets KERAS_BACKEND before Keras is imported)

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def regression(K):
    model = K.Sequential([K.Input((4,)), K.layers.Dense(3, activation="tanh"),
                          K.layers.Dense(1)])
    model.compile(K.optimizers.SGD(0.1), "mse", metrics=["mae"])
    return model


def test_each_call_reports_its_own_batch():
    kiln_model, keras_model, _ = keras_oracle.build_pair(regression)
    rng = np.random.default_rng(0)
    batches = [(rng.standard_normal((8, 4)).astype(np.float32),
                rng.standard_normal((8, 1)).astype(np.float32) * (1 + 3 * i)) for i in range(2)]
    for method in ("train_on_batch", "test_on_batch"):
        for index, (x, y) in enumerate(batches):
            kiln_logs = getattr(kiln_model, method)(x, y, return_dict=True)
            keras_logs = getattr(keras_model, method)(x, y, return_dict=True)
            assert kiln_logs.keys() == keras_logs.keys()
            np.testing.assert_allclose(
                [kiln_logs[k] for k in keras_logs], [float(v) for v in keras_logs.values()],
                rtol=keras_oracle.RTOL, atol=keras_oracle.ATOL, err_msg=f"{method} {index}")


def two_outputs_of_one_nested_model(K):
    """mnist_acgan's combined model: both outputs come from one nested model, so Keras names
    both per-output losses 'functional_loss'."""
    inputs = K.Input((4,))
    inner = K.Model(inputs, [K.layers.Dense(1, activation="sigmoid", name="generation")(inputs),
                             K.layers.Dense(3, activation="softmax", name="auxiliary")(inputs)])
    outer_inputs = K.Input((4,))
    model = K.Model(outer_inputs, inner(outer_inputs))
    model.compile(K.optimizers.SGD(0.1),
                  ["binary_crossentropy", "sparse_categorical_crossentropy"])
    return model


def test_list_results_follow_metrics_names_when_two_losses_share_a_name():
    kiln_model, keras_model, _ = keras_oracle.build_pair(two_outputs_of_one_nested_model)
    x = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    y = [np.full(8, 0.9, np.float32), np.arange(8) % 3]
    for method in ("train_on_batch", "test_on_batch", "evaluate"):
        kwargs = {"verbose": 0} if method == "evaluate" else {}
        ours = getattr(kiln_model, method)(x, y, **kwargs)
        theirs = getattr(keras_model, method)(x, y, **kwargs)
        assert kiln_model.metrics_names == keras_model.metrics_names
        assert len(ours) == len(theirs) == len(kiln_model.metrics_names) == 3, method
        np.testing.assert_allclose(ours, [float(v) for v in theirs],
                                   rtol=keras_oracle.RTOL, atol=keras_oracle.ATOL, err_msg=method)
