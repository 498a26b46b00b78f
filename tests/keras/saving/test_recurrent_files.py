"""Models with recurrent layers in files, both ways with real Keras 3: the weights live in
the layers' cells in both frameworks, so the .keras archive, the Keras 2 .h5 model and the
.weights.h5 file name them alike. Three architectures: stacked GRU / SimpleRNN / LSTM layers;
Bidirectional wrappers (their two layers are `forward_layer` and `backward_layer` in both); the
RNN wrapper over cells, whose config nests the cell (or the stack of cells) as Keras writes it
and whose weights live in the cells ("rnn/lstm_cell/kernel",
"bidirectional/forward_rnn_1/stacked_rnn_cells/gru_cell/kernel"); Keras reading kiln's file
also checks kiln's predictions there: a stack of cells in a Bidirectional runs as two chains
of ops and the merge."""

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


def stacked_layers(K, x):
    x = K.layers.GRU(4, return_sequences=True)(x)
    x = K.layers.SimpleRNN(3, return_sequences=True, go_backwards=True)(x)
    return K.layers.LSTM(3)(x)


def bidirectional_layers(K, x):
    x = K.layers.Bidirectional(K.layers.GRU(4, return_sequences=True), merge_mode="sum")(x)
    return K.layers.Bidirectional(K.layers.LSTM(3), backward_layer=K.layers.LSTM(
        3, go_backwards=True, unit_forget_bias=False))(x)


def cell_wrappers(K, x):
    x = K.layers.RNN(K.layers.LSTMCell(4), return_sequences=True)(x)
    return K.layers.Bidirectional(K.layers.RNN(K.layers.StackedRNNCells(
        [K.layers.GRUCell(3), K.layers.SimpleRNNCell(2)])), merge_mode="ave")(x)


@pytest.fixture(params=[stacked_layers, bidirectional_layers, cell_wrappers],
                ids=["stacked", "bidirectional", "cells"])
def build(request):
    def model(K):
        inputs = K.Input((5, 3))
        return K.Model(inputs, K.layers.Dense(2)(request.param(K, inputs)))
    return model


@pytest.fixture
def data():
    return np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)


def test_keras_archive_both_ways(tmp_path, data, build):
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


def test_weights_file_read_by_keras(tmp_path, data, build):
    ours = build(kk)
    ours.save_weights(tmp_path / "ours.weights.h5")
    theirs = build(keras_real)
    theirs.load_weights(tmp_path / "ours.weights.h5")
    np.testing.assert_allclose(theirs.predict(data, verbose=0), ours.predict(data, verbose=0),
                               rtol=1e-4, atol=1e-6)


def test_legacy_h5_round_trip(tmp_path, data, build):
    ours = build(kk)
    ours.save(tmp_path / "ours.h5")
    np.testing.assert_array_equal(kk.models.load_model(tmp_path / "ours.h5").predict(
        data, verbose=0), ours.predict(data, verbose=0))


def build_with_states(K):
    """Initial states from another input, and the final states as outputs."""
    sequence, context = K.Input((5, 3)), K.Input((2,))
    states = [K.layers.Dense(4)(context), K.layers.Dense(4)(context)]
    output, h, c = K.layers.LSTM(4, return_state=True, return_sequences=True)(
        sequence, initial_state=states)
    return K.Model([sequence, context], [K.layers.Flatten()(output), h, c])


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_initial_and_final_states_in_files(tmp_path, suffix):
    rng = np.random.default_rng(1)
    data = [rng.normal(size=(4, 5, 3)).astype(np.float32),
            rng.normal(size=(4, 2)).astype(np.float32)]
    ours = build_with_states(kk)
    expected = ours.predict(data, verbose=0)
    ours.save(tmp_path / f"ours{suffix}")
    for got, want in zip(kk.models.load_model(tmp_path / f"ours{suffix}").predict(
            data, verbose=0), expected, strict=True):
        np.testing.assert_array_equal(got, want)
    if suffix == ".keras":
        theirs = keras_real.models.load_model(tmp_path / "ours.keras")
        for got, want in zip(theirs.predict(data, verbose=0), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
