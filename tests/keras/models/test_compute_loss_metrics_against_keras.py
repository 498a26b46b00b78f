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


def extra_logs(K, keep_compiled):
    """compute_metrics adding logs computed from y_pred, y and x (to super()'s logs, or
    alone)."""

    class Logged(K.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.out = K.layers.Dense(3, name="out")

        def call(self, x):
            return self.out(x)

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            logs = (super().compute_metrics(x, y, y_pred, sample_weight) if keep_compiled
                    else {})
            logs["mean_output"] = K.ops.mean(y_pred)
            logs["error_and_input"] = K.ops.mean(K.ops.abs(y - y_pred)) + K.ops.mean(x)
            return logs

    return Logged(name="logged")


@pytest.mark.parametrize("keep_compiled", [True, False])
def test_a_compute_metrics_override_logs_as_keras(keep_compiled):
    kiln_model, keras_model, _ = build_pair(lambda K: extra_logs(K, keep_compiled),
                                            input_shapes=(4,))
    keras = real_keras()
    # (Keras raises when compiled metrics exist but the override never updates them)
    metrics = ["mae"] if keep_compiled else None
    kiln_model.compile(optimizer="sgd", loss="mse", metrics=metrics)
    keras_model.compile(optimizer=keras.optimizers.SGD(), loss="mse", metrics=metrics)
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


def test_compiled_metrics_a_compute_metrics_override_drops_are_refused():
    from kiln import keras as kk

    model = extra_logs(kk, keep_compiled=False)
    model.build((None, 4))
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    with pytest.raises(ValueError, match=r"compiled metrics \['mae'\] are never updated"):
        model.train_on_batch(np.ones((2, 4), np.float32), np.ones((2, 3), np.float32))
