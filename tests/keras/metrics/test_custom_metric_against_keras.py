"""A user's keras.metrics.Metric subclass (state in add_variable / add_weight variables,
update_state written with keras.ops) against Keras 3: the values fit logs per batch and per
epoch, evaluate's, the reset at each epoch's start, Keras 3's stateful `metric(y_true,
y_pred)` call, and `keras.metrics.get` / `keras.losses.get` of serialized configs."""

import os

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def metric_class(K, calls=None):
    """The same Metric subclass for either Keras."""

    class WeightedHits(K.metrics.Metric):
        def __init__(self, threshold=0.5, name="hits", **kwargs):
            super().__init__(name=name, **kwargs)
            self.threshold = threshold
            self.hits = self.add_variable(shape=(), initializer="zeros", name="hits")
            self.total = self.add_weight(name="total", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            if calls is not None:
                calls.append(tuple(np.shape(y_pred)))
            ops = K.ops
            hit = ops.cast(ops.equal(ops.cast(ops.greater(y_pred, self.threshold), "float32"),
                                     y_true), "float32")
            hit = ops.reshape(hit, (-1,))
            weight = ops.ones_like(hit) if sample_weight is None else ops.reshape(
                ops.cast(sample_weight, "float32"), (-1,))
            self.hits.assign_add(ops.sum(ops.multiply(hit, weight)))
            self.total.assign_add(ops.sum(weight))

        def result(self):
            return self.hits / self.total

    return WeightedHits


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 4)).astype(np.float32)
    y = (rng.random((20, 1)) > 0.5).astype(np.float32)
    w = rng.uniform(0.1, 2.0, 20).astype(np.float32)
    return x, y, w


def run(K, initial, weighted, calls=None):
    x, y, w = data()
    model = K.Sequential([K.Input((4,)), K.layers.Dense(1, activation="sigmoid")])
    model.set_weights(initial)
    metric = metric_class(K, calls)(threshold=0.4)
    model.compile(optimizer=K.optimizers.SGD(0.5), loss="binary_crossentropy",
                  **({"weighted_metrics": [metric]} if weighted else {"metrics": [metric]}))
    batches = []

    class Record(K.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            batches.append(float(logs["hits"]))

    history = model.fit(x, y, sample_weight=w, batch_size=6, epochs=2, shuffle=False,
                        verbose=0, callbacks=[Record()], validation_data=(x[:9], y[:9]))
    evaluated = model.evaluate(x, y, sample_weight=w, batch_size=7, verbose=0,
                               return_dict=True)
    return history.history, batches, evaluated


@pytest.mark.parametrize("weighted", [False, True])
def test_custom_metric_logs_as_keras(keras, weighted):
    calls = []
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(1, activation="sigmoid")])
    initial = model.get_weights()
    history, batches, evaluated = run(kk, initial, weighted, calls)
    keras_history, keras_batches, keras_evaluated = run(keras, initial, weighted)
    assert set(history) == set(keras_history) == {"hits", "loss", "val_hits", "val_loss"}
    for name in ("hits", "val_hits"):
        np.testing.assert_allclose(history[name], keras_history[name], rtol=1e-6)
    # per batch: the running value since the epoch began (reset at each epoch's start)
    np.testing.assert_allclose(batches, keras_batches, rtol=1e-6)
    assert len(batches) == 8
    np.testing.assert_allclose(evaluated["hits"], keras_evaluated["hits"], rtol=1e-6)
    np.testing.assert_allclose(evaluated["loss"], keras_evaluated["loss"], rtol=1e-5)
    # one update per batch, on the whole batch's outputs (never per sample)
    assert calls[:6] == [(6, 1), (6, 1), (6, 1), (2, 1), (6, 1), (3, 1)]  # then validation


def test_custom_metric_state_calls_as_keras(keras):
    values = {}
    for K in (kk, keras):
        metric = metric_class(K)()
        first = float(metric(np.array([1.0, 0.0]), np.array([0.9, 0.8])))
        second = float(metric(np.array([1.0, 1.0]), np.array([0.9, 0.8])))  # accumulates
        names = [v.name for v in metric.variables]
        metric.reset_state()
        after_reset = [float(np.asarray(v.numpy() if hasattr(v, "numpy") else v))
                       for v in metric.variables]
        metric.update_state(np.array([0.0]), np.array([0.2]), sample_weight=np.array([3.0]))
        values[K] = (first, second, names, after_reset, float(metric.result()))
    kiln_values, keras_values = values[kk], values[keras]
    assert kiln_values[2] == keras_values[2] == ["hits", "total"]
    np.testing.assert_allclose([kiln_values[0], kiln_values[1], *kiln_values[3],
                                kiln_values[4]],
                               [keras_values[0], keras_values[1], *keras_values[3],
                                keras_values[4]], rtol=1e-6)
    assert kiln_values[1] == pytest.approx(0.75)


def test_builtin_metric_call_accumulates_as_keras(keras):
    for K in (kk, keras):
        metric = K.metrics.MeanSquaredError()
        assert float(metric(np.zeros(2), np.ones(2))) == pytest.approx(1.0)
        assert float(metric(np.zeros(2), 3 * np.ones(2))) == pytest.approx(5.0)


def test_add_variable_before_init_is_refused():
    class Broken(kk.metrics.Metric):
        def __init__(self):
            self.v = self.add_variable(shape=(), initializer="zeros")

    with pytest.raises(RuntimeError, match="super\\(\\).__init__"):
        Broken()


@pytest.mark.parametrize("make", [
    lambda K: K.losses.MeanSquaredError(),
    lambda K: K.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
    lambda K: K.losses.MeanAbsoluteError(name="h"),
])
def test_losses_get_of_serialized_config(keras, make):
    config = keras.losses.serialize(make(keras))
    assert kk.losses.serialize(make(kk)) == config
    loss = kk.losses.get(config)
    reference = keras.losses.get(config)
    assert type(loss).__name__ == type(reference).__name__
    assert loss.get_config() == reference.get_config()
    y_true = np.eye(3, dtype=np.float32)[[0, 2]]
    y_pred = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], np.float32)
    np.testing.assert_allclose(float(loss(y_true, y_pred)), float(reference(y_true, y_pred)),
                               rtol=1e-5)


def test_losses_get_of_function_config(keras):
    config = keras.losses.serialize(keras.losses.mean_squared_error)
    loss = kk.losses.get(config)
    assert float(loss(np.zeros((2, 2)), np.ones((2, 2)))) == pytest.approx(1.0)
    assert kk.losses.deserialize(config).name == "mean_squared_error"


@pytest.mark.parametrize("make", [
    lambda K: K.metrics.MeanSquaredError(name="m"),
    lambda K: K.metrics.Precision(thresholds=0.3),
    lambda K: K.metrics.BinaryAccuracy(threshold=0.7),
])
def test_metrics_get_of_serialized_config(keras, make):
    config = keras.metrics.serialize(make(keras))
    metric = kk.metrics.get(config)
    reference = keras.metrics.get(config)
    assert type(metric).__name__ == type(reference).__name__
    assert metric.name == reference.name
    y_true = np.array([[1.0], [0.0], [1.0]], np.float32)
    y_pred = np.array([[0.8], [0.4], [0.5]], np.float32)
    np.testing.assert_allclose(float(metric(y_true, y_pred)),
                               float(reference(y_true, y_pred)), rtol=1e-6)
    assert kk.metrics.serialize(metric)["class_name"] == config["class_name"]


def test_get_of_dict_without_class_name_is_refused():
    with pytest.raises(ValueError, match="class_name"):
        kk.losses.get({"config": {}})
    with pytest.raises(ValueError, match="class_name"):
        kk.metrics.get({"config": {}})
