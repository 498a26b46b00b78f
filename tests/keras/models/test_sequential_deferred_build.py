"""A Sequential whose first layer has no input shape (Keras 2's imdb_lstm.py starts with
`Embedding(max_features, 128)`) is built by the first fit / predict from the data's shape, as
Keras 3 builds it: same weights, predictions and training step as real Keras 3 (JAX)."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from keras_oracle import RTOL, assert_weights_close, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

TOKENS = np.random.default_rng(0).integers(0, 30, (8, 7)).astype(np.int32)
LABELS = np.random.default_rng(1).integers(0, 2, (8, 1)).astype(np.float32)


def layers(K):
    return [K.layers.Embedding(30, 4), K.layers.LSTM(3),
            K.layers.Dense(1, activation="sigmoid")]


def test_fit_builds_from_the_data_and_trains_as_keras():
    keras = real_keras()
    model = kk.Sequential(layers(kk))
    assert not model.built
    model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.5), loss="binary_crossentropy")
    initial = None

    class Capture(kk.callbacks.Callback):
        def on_train_begin(self, logs=None):
            nonlocal initial
            initial = [w.copy() for w in self.model.get_weights()]

    kiln_loss = model.fit(TOKENS, LABELS, batch_size=8, epochs=1, shuffle=False, verbose=0,
                          callbacks=[Capture()]).history["loss"][0]
    assert model.built and tuple(model.input.shape) == (None, 7)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        reference = keras.Sequential(layers(keras))
        reference.build((None, 7))
        assert [w.shape for w in reference.get_weights()] == [w.shape for w in initial]
        reference.set_weights(initial)
        reference.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5),
                          loss="binary_crossentropy")
        keras_loss = reference.fit(TOKENS, LABELS, batch_size=8, epochs=1, shuffle=False,
                                   verbose=0).history["loss"][0]
        assert kiln_loss == pytest.approx(keras_loss, rel=RTOL)
        assert_weights_close(model, reference, "after one step")
        np.testing.assert_allclose(model.predict(TOKENS, verbose=0),
                                   reference.predict(TOKENS, verbose=0), rtol=RTOL, atol=1e-5)


def test_predict_builds_too_and_a_shapeless_input_is_refused():
    model = kk.Sequential(layers(kk))
    assert model.predict(TOKENS[:3], verbose=0).shape == (3, 1)
    assert tuple(model.input.shape) == (None, 7)
    flat = kk.Sequential([kk.layers.Dense(2)])
    flat.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"Dense 'dense\w*': the first layer has no "
                                         r"input_shape= and the data's shape \(4,\)"):
        flat.fit(np.zeros(4, np.float32), np.zeros(4, np.float32), verbose=0)
