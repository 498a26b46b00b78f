"""Metric trackers a `compute_loss` override updates with values it computes (keras.io's
backend-agnostic way, now that `add_metric` is gone): `self.kl_tracker =
keras.metrics.Mean(name="kl")`, `self.kl_tracker.update_state(kl)` inside compute_loss, and
optionally a `metrics` property listing them. Against real Keras 3 (JAX) from the same
weights: the names and values fit and evaluate log, and the weights."""

import numpy as np
import pytest
from keras_oracle import ATOL, RTOL, assert_weights_close, build_pair, real_keras


def tracked(K, listing):
    """A model tracking a per-sample penalty ('kl') and its total loss ('total');
    `listing`: None (no metrics property), 'own' (only the trackers) or 'super' (after
    super().metrics)."""

    class Tracked(K.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = K.layers.Dense(5, activation="tanh", name="hidden")
            self.out = K.layers.Dense(3, name="out")
            self.kl_tracker = K.metrics.Mean(name="kl")
            self.total_tracker = K.metrics.Mean(name="total")

        def call(self, x):
            return self.out(self.hidden(x))

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            kl = 0.1 * K.ops.sum(K.ops.square(y_pred), axis=1)  # one value per sample
            total = loss + K.ops.mean(kl)
            self.kl_tracker.update_state(kl)
            self.total_tracker.update_state(total)
            return total

    if listing == "own":
        Tracked.metrics = property(lambda self: [self.kl_tracker, self.total_tracker])
    elif listing == "super":
        Tracked.metrics = property(
            lambda self: K.Model.metrics.fget(self) + [self.kl_tracker])
    return Tracked(name="tracked")


def assert_logs_equal(kiln_logs, keras_logs, what):
    assert sorted(kiln_logs) == sorted(keras_logs), what
    for name, value in keras_logs.items():
        assert np.asarray(kiln_logs[name]) == pytest.approx(np.asarray(value), rel=RTOL,
                                                            abs=ATOL), f"{what}: {name}"


@pytest.mark.parametrize("listing", [None, "own", "super"])
def test_trackers_updated_in_compute_loss_are_logged_as_keras(listing):
    kiln_model, keras_model, _ = build_pair(lambda K: tracked(K, listing), input_shapes=(4,))
    keras = real_keras()
    kiln_model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    keras_model.compile(optimizer=keras.optimizers.SGD(), loss="mse", metrics=["mae"])
    rng = np.random.default_rng(0)
    x = rng.random((8, 4)).astype(np.float32)
    y = rng.random((8, 3)).astype(np.float32)
    kiln_fit = kiln_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    keras_fit = keras_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert_logs_equal(kiln_fit.history, keras_fit.history, "fit")
    assert_weights_close(kiln_model, keras_model, "after fit")
    assert_logs_equal(kiln_model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True),
                      keras_model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True),
                      "evaluate")
