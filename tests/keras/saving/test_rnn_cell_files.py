"""Models with the RNN wrapper over cells in files, both ways with real Keras 3: the config
nests the cell (or the stack of cells) as Keras writes it, and the weights live in the cells
("rnn/lstm_cell/kernel", "bidirectional/forward_rnn_1/stacked_rnn_cells/gru_cell/kernel")
in both frameworks. Keras reading kiln's file also checks kiln's predictions: a stack of
cells in a Bidirectional runs as two chains of ops and the merge."""

import keras_oracle
import numpy as np
import pytest

from kiln import keras as kk

keras_real = keras_oracle.real_keras()  # the JAX backend (the module is skipped without it)

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def build(K):
    inputs = K.Input((5, 3))
    x = K.layers.RNN(K.layers.LSTMCell(4), return_sequences=True)(inputs)
    x = K.layers.Bidirectional(K.layers.RNN(K.layers.StackedRNNCells(
        [K.layers.GRUCell(3), K.layers.SimpleRNNCell(2)])), merge_mode="ave")(x)
    return K.Model(inputs, K.layers.Dense(2)(x))


@pytest.fixture
def data():
    return np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)


def test_keras_archive_both_ways(tmp_path, data):
    ours = build(kk)
    expected = ours.predict(data, verbose=0)
    ours.save(tmp_path / "ours.keras")
    again = kk.models.load_model(tmp_path / "ours.keras")
    assert [w.path for w in again.weights] == [w.path for w in ours.weights]
    np.testing.assert_allclose(again.predict(data, verbose=0), expected, rtol=1e-6)
    theirs = keras_real.models.load_model(tmp_path / "ours.keras")
    assert [w.path for w in theirs.weights] == [w.path for w in ours.weights]
    np.testing.assert_allclose(theirs.predict(data, verbose=0), expected, rtol=1e-4, atol=1e-6)
    theirs.save(tmp_path / "theirs.keras")
    np.testing.assert_allclose(kk.models.load_model(tmp_path / "theirs.keras").predict(
        data, verbose=0), expected, rtol=1e-4, atol=1e-6)


def test_legacy_h5_round_trip(tmp_path, data):
    ours = build(kk)
    ours.save(tmp_path / "ours.h5")
    np.testing.assert_array_equal(kk.models.load_model(tmp_path / "ours.h5").predict(
        data, verbose=0), ours.predict(data, verbose=0))
