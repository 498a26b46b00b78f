"""kiln.keras Sequential models: weights, determinism, the equivalence of channels_first and
channels_last models, and plans whose gradient layout differs from the weight layout."""

import numpy as np
import pytest
from model_helpers import (
    CF,
    CL,
    compiled_cnn,
    quadrant_data,
)

from kiln import keras
from kiln.keras import initializers
from kiln.keras.layers import Conv2D, Dense, Flatten, Input, MaxPooling2D
from kiln.keras.optimizers import SGD, Adam

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


# -- weights ----------------------------------------------------------------------------------
def test_get_set_weights_round_trip_and_training_changes_weights():
    model = compiled_cnn(SGD(lr=0.5))
    weights = model.get_weights()
    assert [w.shape for w in weights] == [(3, 3, 1, 4), (4,), (36, 4), (4,)]
    assert [w.path for w in model.weights] == [
        f"{model.layers[0].name}/kernel", f"{model.layers[0].name}/bias",
        f"{model.layers[-1].name}/kernel", f"{model.layers[-1].name}/bias"]
    new = [np.random.default_rng(i).uniform(-0.3, 0.3, w.shape).astype(np.float32)
           for i, w in enumerate(weights)]
    model.set_weights(new)
    for got, expected in zip(model.get_weights(), new):
        np.testing.assert_array_equal(got, expected)
    x, y = quadrant_data(32)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    trained = model.get_weights()
    for got, expected in zip(trained, new):
        assert got.shape == expected.shape and not np.allclose(got, expected)
    # set_weights after training (weights now in packed, blocked layouts) is read back exactly.
    model.set_weights(new)
    for got, expected in zip(model.get_weights(), new):
        np.testing.assert_array_equal(got, expected)
    other = compiled_cnn()
    other.set_weights(new)
    np.testing.assert_allclose(other.predict(x), model.predict(x), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="expected 4 arrays"):
        model.set_weights(new[:3])
    with pytest.raises(ValueError, match=r"expected shape \(36, 4\)"):
        model.set_weights([*new[:2], new[2].T, new[3]])


def _train_seeded(seed, dropout_seed, shuffle, steps_data=64):
    initializers.set_random_seed(seed)
    model = compiled_cnn(Adam(lr=0.01), dropout=0.5, seed=dropout_seed)
    x, y = quadrant_data(steps_data, seed=5)
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=shuffle)
    return model.get_weights(), history.history["loss"]


@pytest.mark.parametrize("shuffle", [False, True])
def test_identically_seeded_training_is_deterministic(shuffle):
    weights_a, loss_a = _train_seeded(11, 5, shuffle)
    weights_b, loss_b = _train_seeded(11, 5, shuffle)
    assert loss_a == loss_b
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_array_equal(a, b)


def test_seeds_matter():
    """Different initializer or dropout seeds give different results, so the determinism test
    above cannot pass by accident (and dropout really is active in training)."""
    weights, loss = _train_seeded(11, 5, False)
    for other_weights, other_loss in [_train_seeded(12, 5, False), _train_seeded(11, 6, False)]:
        assert other_loss != loss
        assert not np.array_equal(other_weights[2], weights[2])


# -- channels_first vs channels_last -----------------------------------------------------------
def test_channels_first_and_last_models_agree():
    x_cl, y = quadrant_data(32, CL, seed=6)
    x_cf = np.ascontiguousarray(x_cl.transpose(0, 3, 1, 2))
    models = {}
    for data_format in (CL, CF):
        shape = (8, 8, 1) if data_format == CL else (1, 8, 8)
        models[data_format] = keras.Sequential([
            Conv2D(3, (3, 2), activation="relu", padding="same", input_shape=shape,
                   data_format=data_format),
            MaxPooling2D((2, 4), data_format=data_format),
            Flatten(data_format=data_format),
            Dense(6, activation="tanh"),
            Dense(4, activation="softmax")])
        models[data_format].compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.5),
                                    metrics=["accuracy"])
    # Keras flattens (H, W, C) in both formats: the same weights serve both models
    weights = models[CL].get_weights()
    assert weights[2].shape == (4 * 2 * 3, 6)
    models[CF].set_weights(weights)
    np.testing.assert_allclose(models[CF].predict(x_cf), models[CL].predict(x_cl),
                               rtol=1e-5, atol=1e-6)
    history = {f: models[f].fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
               for f, x in ((CL, x_cl), (CF, x_cf))}
    assert history[CF].history["loss"] == pytest.approx(history[CL].history["loss"], rel=1e-5)
    loss_cl = models[CL].evaluate(x_cl, y, verbose=0)[0]
    loss_cf = models[CF].evaluate(x_cf, y, verbose=0)[0]
    assert loss_cf == pytest.approx(loss_cl, rel=1e-4)
    trained_cl, trained_cf = models[CL].get_weights(), models[CF].get_weights()
    for cf, cl in zip(trained_cf, trained_cl):
        np.testing.assert_allclose(cf, cl, rtol=1e-4, atol=1e-6)
    for a, b in zip(trained_cf[:2] + trained_cf[3:], trained_cl[:2] + trained_cl[3:]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_channels_first_model_trains_and_its_weights_round_trip():
    x, y = quadrant_data(256, CF, seed=8)
    model = compiled_cnn(Adam(lr=0.01), data_format=CF)
    assert [w.shape for w in model.get_weights()] == [(3, 3, 1, 4), (4,), (36, 4), (4,)]
    history = model.fit(x, y, batch_size=32, epochs=4, verbose=0, shuffle=False,
                        validation_data=(x, y))
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert history.history["val_accuracy"][-1] >= 0.9
    clone = compiled_cnn(data_format=CF)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(x), model.predict(x), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match=r"\(batch, 1, 8, 8\) for data_format 'channels_first'"):
        model.predict(x.transpose(0, 2, 3, 1))


def test_input_layer_first_model_trains():
    model = keras.Sequential([Input((8, 8, 1)), Conv2D(2, 3), Flatten(),
                              Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=Adam(lr=0.05),
                  metrics=["accuracy"])
    x, y = quadrant_data(64)
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


# -- plans whose weight-gradient layout differs from the stored weight layout ------------------
# (regressions: the deferred gradient reorder of kiln/plan/builder.py once recursed forever)


def test_two_stacked_convolutions_train():
    model = keras.Sequential([Conv2D(4, 3, input_shape=(8, 8, 1)), Conv2D(3, 2), Flatten(),
                              Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=0.1))
    x, y = quadrant_data(32)
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0, shuffle=False)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_fit_after_predict_on_the_mnist_cnn():
    from kiln.bench.models import mnist_cnn
    model, shape, batch_size = mnist_cnn(CL)
    rng = np.random.default_rng(9)
    x = rng.random((batch_size, *shape), dtype=np.float32)
    y = keras.utils.to_categorical(np.arange(batch_size) % 10, 10)
    before = model.predict(x)
    model.fit(x, y, batch_size=batch_size, epochs=1, verbose=0)
    assert not np.allclose(model.predict(x), before)


@pytest.mark.parametrize("predict_first", [False, True])
@pytest.mark.parametrize("data_format", [CL, CF])
def test_stacked_convolution_gradients_match_finite_differences(data_format, predict_first):
    """One SGD step with lr=1 moves each weight by minus its gradient; compare with central
    differences of the loss computed by evaluate(). Stacked small convolutions and a predict()
    before fit() make oneDNN pick weight-gradient layouts that differ from the stored ones."""
    shape = (8, 8, 1) if data_format == CL else (1, 8, 8)
    model = keras.Sequential([
        Conv2D(4, 3, activation="tanh", input_shape=shape, data_format=data_format),
        Conv2D(3, 2, strides=2, padding="same", activation="tanh", data_format=data_format),
        Flatten(data_format=data_format), Dense(5, activation="tanh"),
        Dense(4, activation="softmax")])
    model.compile(loss="categorical_crossentropy", optimizer=SGD(lr=1.0))
    x, y = quadrant_data(16, data_format, seed=10)
    rng = np.random.default_rng(11)
    start = [rng.uniform(-0.6, 0.6, w.shape).astype(np.float32) for w in model.get_weights()]
    model.set_weights(start)
    if predict_first:
        model.predict(x)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)
    gradients = [before - after for before, after in zip(start, model.get_weights())]
    # Directional derivative along a random unit direction in each weight tensor in turn.
    step = 1e-2
    for index, gradient in enumerate(gradients):
        direction = rng.standard_normal(gradient.shape)
        direction /= np.linalg.norm(direction)
        losses = []
        for sign in (1, -1):
            probe = list(start)
            probe[index] = (start[index] + sign * step * direction).astype(np.float32)
            model.set_weights(probe)
            losses.append(model.evaluate(x, y, batch_size=16, verbose=0))
        numeric = (losses[0] - losses[1]) / (2 * step)
        assert np.sum(gradient * direction) == pytest.approx(numeric, abs=1e-4, rel=1e-2), (
            f"gradient of {model.weights[index].name}")
        assert np.abs(gradient).max() > 1e-3  # every weight gets a real gradient
