"""Keras 3's way to report an extra output now that `add_metric` is gone: compiled metrics on
an output without a loss (`loss=[..., None]` or a loss dict without it). Its labels reach the
metric kernels alone; it adds nothing to the loss or the gradient. Against real Keras 3 (JAX)
from the same weights: the logged names and values of fit and evaluate."""

import numpy as np
import pytest
from keras_oracle import ATOL, RTOL, assert_weights_close, build_pair, real_keras


def two_outputs(K, as_dict):
    inputs = K.Input((4,))
    hidden = K.layers.Dense(5, activation="relu", name="hidden")(inputs)
    main = K.layers.Dense(3, name="main")(hidden)
    extra = K.layers.Dense(2, activation="softmax", name="extra")(hidden)
    return K.Model(inputs, {"main": main, "extra": extra} if as_dict else [main, extra])


def assert_logs_equal(kiln_logs, keras_logs, what):
    assert sorted(kiln_logs) == sorted(keras_logs), what
    for name, value in keras_logs.items():
        assert np.asarray(kiln_logs[name]) == pytest.approx(np.asarray(value), rel=RTOL,
                                                            abs=ATOL), f"{what}: {name}"


@pytest.mark.parametrize("as_dict", [False, True])
def test_metrics_of_an_output_without_loss_are_logged_as_keras(as_dict):
    kiln_model, keras_model, _ = build_pair(lambda K: two_outputs(K, as_dict))
    keras = real_keras()
    if as_dict:
        compile_args = dict(loss={"main": "mse"},
                            metrics={"extra": ["mae", "categorical_accuracy"]})
    else:
        compile_args = dict(loss=["mse", None], metrics=[[], ["mae", "accuracy"]])
    kiln_model.compile(optimizer="sgd", **compile_args)
    keras_model.compile(optimizer=keras.optimizers.SGD(), **compile_args)
    rng = np.random.default_rng(0)
    x = rng.random((8, 4)).astype(np.float32)
    y_main = rng.random((8, 3)).astype(np.float32)
    y_extra = np.eye(2, dtype=np.float32)[rng.integers(0, 2, 8)]
    y = {"main": y_main, "extra": y_extra} if as_dict else [y_main, y_extra]
    kiln_fit = kiln_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    keras_fit = keras_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert_logs_equal(kiln_fit.history, keras_fit.history, "fit")
    assert_weights_close(kiln_model, keras_model, "after fit")
    assert_logs_equal(kiln_model.evaluate(x, y, verbose=0, return_dict=True),
                      keras_model.evaluate(x, y, verbose=0, return_dict=True), "evaluate")
