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
