"""Layers and models called on numpy arrays (`layer(x)`, `model(x, training=...)`) against
Keras 3: the same outputs from the same weights, layers built on their first call, the
training-mode forward (batch statistics, and the moving ones updated as Keras does), the
output structure, `input_shape` / `output_shape`, and one cached plan per input signature."""

import os

os.environ["KERAS_BACKEND"] = "jax"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.plan import step_plan  # noqa: E402


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def rng_array(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("make,shape", [
    (lambda K: K.layers.Dense(3, activation="relu"), (4, 5)),
    (lambda K: K.layers.Conv2D(2, 3, padding="same"), (2, 6, 6, 3)),
    (lambda K: K.layers.LayerNormalization(), (3, 7)),
    (lambda K: K.layers.LSTM(4, return_sequences=True), (2, 5, 3)),
], ids=["dense", "conv2d", "layer_norm", "lstm"])
def test_layer_called_on_arrays_as_keras(keras, make, shape):
    x = rng_array(*shape)
    layer = make(kk)
    assert not layer.built
    y = layer(x)
    assert layer.built  # built on its first call, as Keras
    reference = make(keras)
    reference.build(x.shape)
    assert [w.shape for w in layer.weights] == [tuple(w.shape) for w in reference.weights]
    reference.set_weights(layer.get_weights())
    expected = np.asarray(reference(x))
    assert isinstance(y, np.ndarray) and y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    # another batch size: the same weights
    np.testing.assert_allclose(layer(x[:1]), np.asarray(reference(x[:1])), rtol=1e-4,
                               atol=1e-5)


def test_layers_of_several_inputs_called_on_arrays(keras):
    q, v = rng_array(2, 3, 4), rng_array(2, 5, 4, seed=1)
    attention = kk.layers.MultiHeadAttention(2, 4)
    y = attention(q, v)  # two positional arrays
    reference = keras.layers.MultiHeadAttention(2, 4)
    reference(q, v)
    reference.set_weights(attention.get_weights())
    np.testing.assert_allclose(y, np.asarray(reference(q, v)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(kk.layers.Concatenate()([q, q]), np.concatenate([q, q], -1))


def test_embedding_called_on_int_ids(keras):
    ids = np.array([[1, 2, 0], [3, 3, 1]])
    layer = kk.layers.Embedding(4, 2)
    rows = layer(ids)
    np.testing.assert_allclose(rows, layer.get_weights()[0][ids])


def test_batch_norm_training_call_as_keras(keras):
    x = rng_array(6, 3) * 2 + 1
    layer = kk.layers.BatchNormalization(momentum=0.9)
    inference = layer(x)  # builds; moving statistics untouched
    reference = keras.layers.BatchNormalization(momentum=0.9)
    reference.build(x.shape)
    reference.set_weights(layer.get_weights())
    np.testing.assert_allclose(inference, np.asarray(reference(x)), rtol=1e-4, atol=1e-5)
    trained = layer(x, training=True)
    expected = np.asarray(reference(x, training=True))
    np.testing.assert_allclose(trained, expected, rtol=1e-4, atol=1e-5)
    for ours, theirs in zip(layer.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)  # moving stats too


def test_dropout_training_call():
    x = np.ones((50, 40), np.float32)
    layer = kk.layers.Dropout(0.25)
    np.testing.assert_array_equal(layer(x), x)
    np.testing.assert_array_equal(layer(x, training=False), x)
    dropped = layer(x, training=True)
    assert set(np.unique(dropped)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < np.mean(dropped == 0) < 0.35


def build_functional(K):
    inputs = K.Input((4,), name="features")
    hidden = K.layers.Dense(5, activation="tanh", name="hidden")(inputs)
    return K.Model(inputs, {"a": K.layers.Dense(2, name="a")(hidden),
                            "b": K.layers.Dense(1, activation="sigmoid", name="b")(hidden)})


def build_sequential(K):
    return K.Sequential([K.Input((6, 6, 1)), K.layers.Conv2D(3, 3), K.layers.Flatten(),
                         K.layers.Dense(2, activation="softmax")])


@pytest.mark.parametrize("build,shape", [(build_functional, (3, 4)),
                                         (build_sequential, (2, 6, 6, 1))],
                         ids=["functional_dict", "sequential"])
def test_model_called_on_arrays_as_keras(keras, build, shape):
    x = rng_array(*shape)
    model = build(kk)
    reference = build(keras)
    reference.set_weights(model.get_weights())
    assert model.input_shape == reference.input_shape
    assert model.output_shape == reference.output_shape
    for training in (None, False, True):
        ours = model(x) if training is None else model(x, training=training)
        theirs = reference(x) if training is None else reference(x, training=training)
        if isinstance(theirs, dict):
            assert isinstance(ours, dict) and set(ours) == set(theirs)
            for key in theirs:
                np.testing.assert_allclose(ours[key], np.asarray(theirs[key]), rtol=1e-4,
                                           atol=1e-5)
        else:
            assert isinstance(ours, np.ndarray)
            np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-4, atol=1e-5)


def test_subclassed_model_called_on_arrays_as_keras(keras):
    def make(K):
        class Net(K.Model):
            def __init__(self):
                super().__init__()
                self.hidden = K.layers.Dense(4, activation="relu")
                self.out = K.layers.Dense(2)

            def call(self, x):
                return self.out(self.hidden(x))

        return Net()

    x = rng_array(3, 5)
    model, reference = make(kk), make(keras)
    y = model(x)  # built from this first batch
    reference(x)
    reference.set_weights(model.get_weights())
    np.testing.assert_allclose(y, np.asarray(reference(x)), rtol=1e-4, atol=1e-5)


def test_calls_reuse_their_plan(monkeypatch):
    builds = []
    original = step_plan.StepPlan.__init__

    def counting(self, *args, **kwargs):
        builds.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(step_plan.StepPlan, "__init__", counting)
    x = rng_array(3, 4)
    layer = kk.layers.Dense(2)
    first = layer(x)
    for _ in range(3):
        np.testing.assert_array_equal(layer(x), first)
    assert builds == ["StepPlan"]
    layer(x, training=True)
    layer(x, training=True)
    assert builds == ["StepPlan", "TrainingForwardPlan"]
    model = build_sequential(kk)
    x = rng_array(2, 6, 6, 1)
    model(x)
    model(x)
    model.predict_on_batch(x)  # the same inference plan as predict
    assert builds[2:] == ["StepPlan"]


def test_layer_called_on_arrays_then_used_in_a_model_shares_weights():
    layer = kk.layers.Dense(2)
    x = rng_array(3, 4)
    layer(x)
    layer.set_weights([np.ones((4, 2), np.float32), np.zeros(2, np.float32)])
    inputs = kk.Input((4,))
    model = kk.Model(inputs, layer(inputs))
    np.testing.assert_allclose(model.predict(x, verbose=0), x @ np.ones((4, 2)), rtol=1e-6)
    np.testing.assert_allclose(layer(x), x @ np.ones((4, 2)), rtol=1e-6)


def test_bad_eager_calls_are_refused():
    with pytest.raises(ValueError, match="Dense 'dense.*batch axis"):
        kk.layers.Dense(2)(np.float32(1.0))
    model = build_sequential(kk)
    with pytest.raises(TypeError, match="model called on arrays"):
        model(rng_array(2, 6, 6, 1), rng_array(2, 6, 6, 1))
    with pytest.raises(ValueError, match="shape"):
        model(rng_array(2, 5, 5, 1))
    attention = kk.layers.MultiHeadAttention(2, 4)
    with pytest.raises(TypeError, match="MultiHeadAttention.*attention_mask"):
        attention(rng_array(2, 3, 4), rng_array(2, 3, 4),
                  attention_mask=np.ones((2, 3, 3), bool))


def test_wrappers_of_a_layer_called_on_many_shapes_are_bounded(monkeypatch):
    monkeypatch.setenv("KILN_PLAN_CACHE_SIZE", "3")
    layer = kk.layers.Conv1D(2, 3, padding="same")
    rng = np.random.default_rng(0)
    for length in range(4, 12):  # eight input signatures
        x = rng.standard_normal((2, length, 3)).astype(np.float32)
        y = layer(x)
        assert y.shape == (2, length, 2)
    assert len(layer._eager_models) == 3  # the three most recent signatures
    np.testing.assert_allclose(layer(x), y)  # the newest is reused


def test_threads_calling_a_layer_on_new_shapes_get_their_own_results():
    import threading

    layer = kk.layers.Dense(4)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((5, width)).astype(np.float32) for width in (3, 3, 3, 3)]
    layer(inputs[0])  # builds the layer: every thread below uses the same kernel
    kernel, bias = layer.get_weights()
    results, errors = {}, []

    def call(index):
        try:
            for _ in range(20):
                results[index] = layer(inputs[index])
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for index, x in enumerate(inputs):
        np.testing.assert_allclose(results[index], x @ kernel + bias, rtol=1e-5, atol=1e-6)
    assert len(layer._eager_models) == 1
