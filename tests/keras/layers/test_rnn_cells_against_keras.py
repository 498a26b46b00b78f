"""keras.layers.RNN over SimpleRNNCell, LSTMCell, GRUCell and StackedRNNCells against real
Keras 3 (JAX backend), through the shared checker (keras_oracle.py): weight names, paths and
order, predictions and a training step from the same weights; configs equal to Keras's and
round trips; a cell called on one step; what kiln refuses, naming the layer.

One model carries most cases, because compiling Keras's functions is most of the time: every
cell, a stack of three mixed cells with initial states, return_sequences, return_state and
go_backwards, Bidirectional(RNN(GRUCell)) and a GRUCell called on one step."""

import numpy as np
import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

keras_real = pytest.importorskip("keras")  # keras_oracle chose the JAX backend

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

T, C = 4, 3


def every_cell(K):
    """sequence -> Bidirectional(RNN(GRUCell)) -> RNN(StackedRNNCells(LSTMCell, GRUCell,
    SimpleRNNCell)) backwards, its initial states from a second input (one of them a
    GRUCell's step), its sequence and all its final states read by the head."""
    L = K.layers
    sequence, context = K.Input((T, C)), K.Input((2,))
    x = L.Bidirectional(L.RNN(L.GRUCell(3), return_sequences=True))(sequence)
    step, _ = L.GRUCell(2)(context, [L.Dense(2)(context)])
    states = [[L.Dense(4)(context), L.Dense(4)(context)], L.Dense(3)(context), step]
    cells = [L.LSTMCell(4), L.GRUCell(3, reset_after=False),
             L.SimpleRNNCell(2, activation="relu")]
    output, (h1, c1), h2, h3 = L.RNN(L.StackedRNNCells(cells), return_sequences=True,
                                     return_state=True, go_backwards=True)(
        x, initial_state=states)
    x = L.Concatenate()([L.Flatten()(output), h1, c1, h2, h3])
    return K.Model([sequence, context], L.Dense(3, activation="softmax")(x))


def test_every_cell_predicts_and_trains_as_keras():
    # (no randomness in training: Keras's separate training-mode forward is left out)
    check_against_keras(every_cell, optimizers=("sgd",), steps=1, training_forward=False)


def test_weights_of_the_cells_as_keras():
    """Keras 3's paths and get_weights() order (also compared with Keras's own above)."""
    kk.backend.clear_session()
    layer = kk.layers.RNN(kk.layers.LSTMCell(8))
    layer(kk.Input((T, C)))
    assert [(w.path, tuple(w.shape)) for w in layer.weights] == [
        ("rnn/lstm_cell/kernel", (C, 32)), ("rnn/lstm_cell/recurrent_kernel", (8, 32)),
        ("rnn/lstm_cell/bias", (32,))]
    stack = kk.layers.RNN([kk.layers.GRUCell(3), kk.layers.SimpleRNNCell(2)])
    stack(kk.Input((T, C)))
    assert [(w.path, tuple(w.shape)) for w in stack.weights] == [
        ("rnn_1/stacked_rnn_cells/gru_cell/kernel", (C, 9)),
        ("rnn_1/stacked_rnn_cells/gru_cell/recurrent_kernel", (3, 9)),
        ("rnn_1/stacked_rnn_cells/gru_cell/bias", (2, 9)),
        ("rnn_1/stacked_rnn_cells/simple_rnn_cell/kernel", (3, 2)),
        ("rnn_1/stacked_rnn_cells/simple_rnn_cell/recurrent_kernel", (2, 2)),
        ("rnn_1/stacked_rnn_cells/simple_rnn_cell/bias", (2,))]
    assert [w.shape for w in stack.get_weights()] == [(C, 9), (3, 9), (2, 9), (3, 2), (2, 2),
                                                      (2,)]


def test_a_single_cell_rnn_is_the_layer():
    """RNN(LSTMCell(...)) and LSTM(...) compute the same from the same weights."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, T, C)).astype(np.float32)
    outputs, weights = [], None
    for make in (lambda L: L.RNN(L.LSTMCell(4), go_backwards=True, return_sequences=True),
                 lambda L: L.LSTM(4, go_backwards=True, return_sequences=True)):
        model = kk.models.Sequential([kk.Input((T, C)), make(kk.layers)])
        if weights is not None:  # the second model takes the first one's weights
            model.set_weights(weights)
        weights = model.get_weights()
        outputs.append(model.predict(x, verbose=0))
    np.testing.assert_array_equal(outputs[0], outputs[1])


@pytest.mark.parametrize("make", [
    lambda L: L.RNN(L.LSTMCell(3, unit_forget_bias=False, kernel_regularizer="l2"),
                    return_state=True, go_backwards=True, unroll=True),
    lambda L: L.RNN(L.StackedRNNCells([L.GRUCell(2, reset_after=False, dropout=0.25),
                                       L.SimpleRNNCell(3, activation="relu", seed=4)]),
                    return_sequences=True, stateful=True),
    lambda L: L.RNN([L.GRUCell(2), L.LSTMCell(2, use_bias=False)]),
    lambda L: L.LSTMCell(5, recurrent_initializer="glorot_uniform"),
    lambda L: L.SimpleRNNCell(2, activation=None),
])
def test_config_equals_keras_and_round_trips(make):
    kk.backend.clear_session()
    keras_real.backend.clear_session()
    ours, theirs = make(kk.layers), make(keras_real.layers)
    assert ours.get_config() == theirs.get_config()
    again = type(ours).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()
    from_keras = type(ours).from_config(theirs.get_config())
    assert from_keras.get_config() == ours.get_config()


def test_layers_and_cells_are_keras_classes():
    lstm = kk.layers.LSTM(3)
    assert isinstance(lstm, kk.layers.RNN) and isinstance(lstm.cell, kk.layers.LSTMCell)
    assert lstm.cell.name == "lstm_cell" and lstm.cell.state_size == [3, 3]
    assert lstm.activation == "tanh" and lstm.unit_forget_bias is True
    stack = kk.layers.StackedRNNCells([kk.layers.GRUCell(2), kk.layers.LSTMCell(3)])
    assert stack.state_size == [2, [3, 3]] and stack.output_size == 3


def test_stateful_stack_carries_every_cell_state():
    layer = kk.layers.RNN([kk.layers.GRUCell(3), kk.layers.LSTMCell(2)], stateful=True)
    model = kk.models.Sequential([kk.Input((T, C), batch_size=2), layer])
    x = np.random.default_rng(1).normal(size=(2, T, C)).astype(np.float32)
    first = model.predict(x, batch_size=2, verbose=0)
    assert [s.shape for s in layer.states] == [(2, 3), (2, 2), (2, 2)]
    assert not np.allclose(model.predict(x, batch_size=2, verbose=0), first)
    layer.reset_state()
    np.testing.assert_allclose(model.predict(x, batch_size=2, verbose=0), first, rtol=1e-6)


def test_cell_dropout_acts_on_the_input_in_training_only():
    layer = kk.layers.RNN(kk.layers.LSTMCell(3, dropout=0.5, seed=1))
    assert layer.input_dropout is not None
    model = kk.models.Sequential([kk.Input((T, C)), layer, kk.layers.Dense(2)])
    x = np.random.default_rng(2).normal(size=(8, T, C)).astype(np.float32)
    expected = kk.models.Sequential([kk.Input((T, C)), kk.layers.LSTM(3), kk.layers.Dense(2)])
    expected.set_weights(model.get_weights())
    np.testing.assert_allclose(model.predict(x, verbose=0), expected.predict(x, verbose=0),
                               rtol=1e-6)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.zeros((8, 2), np.float32), epochs=1, verbose=0)


# -- refused, naming the layer ----------------------------------------------------------------
class MinimalRNNCell(kk.layers.Layer):
    """A user's cell, as in Keras's RNN docstring."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = self.state_size = units

    def call(self, inputs, states):
        return inputs, states


def test_a_custom_cell_is_refused_naming_the_layer():
    with pytest.raises(NotImplementedError, match=r"RNN 'r'.*MinimalRNNCell.*built-in cells"):
        kk.layers.RNN(MinimalRNNCell(3), name="r")
    with pytest.raises(NotImplementedError, match=r"RNN 'r'.*MinimalRNNCell"):
        kk.layers.RNN([kk.layers.GRUCell(2), MinimalRNNCell(3)], name="r")
    with pytest.raises(ValueError, match=r"RNN 'r'.*state_size"):
        kk.layers.RNN(kk.layers.Dense(2), name="r")


def test_bad_inputs_name_the_layer_and_argument():
    inputs = kk.Input((T, C))
    stack = kk.layers.RNN([kk.layers.LSTMCell(2), kk.layers.GRUCell(3)], name="r")
    with pytest.raises(ValueError, match=r"RNN 'r'.*initial_state.*a list per cell"):
        stack(inputs, initial_state=[kk.Input((2,))])
    with pytest.raises(ValueError, match=r"RNN 'q'.*3D input"):
        kk.layers.RNN(kk.layers.GRUCell(2), name="q")(kk.Input((C,)))
    with pytest.raises(ValueError, match=r"GRUCell 'g'.*one step"):
        kk.layers.GRUCell(2, name="g")(inputs, [kk.Input((2,))])
    with pytest.raises(ValueError, match=r"LSTMCell 'l'.*argument states"):
        kk.layers.LSTMCell(2, name="l")(kk.Input((C,)), [kk.Input((2,))])
    with pytest.raises(ValueError, match=r"LSTMCell 'l'.*argument units"):
        kk.layers.LSTMCell(0, name="l")


# recurrent_dropout and activations such as relu / elu run on the fused recurrence; the
# activations it lacks are refused by the cell's name
@pytest.mark.parametrize("make,argument", [
    (lambda L: L.GRUCell(3, recurrent_activation="gelu", name="c"), "recurrent_activation"),
    (lambda L: L.LSTMCell(3, activation="mish", name="c"), "activation"),
    (lambda L: L.SimpleRNNCell(3, activation="hard_silu", name="c"), "activation"),
])
def test_unsupported_cell_arguments_name_the_cell(make, argument):
    with pytest.raises(NotImplementedError, match=rf"'c'.*argument {argument}"):
        make(kk.layers)
    make(keras_real.layers)  # Keras accepts it
