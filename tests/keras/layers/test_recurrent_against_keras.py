"""SimpleRNN, LSTM and GRU against real Keras 3 (JAX backend), through the shared checker
(keras_oracle.py): weight names, shapes, paths (in the layer's cell) and order, predictions
and training steps from the same weights, for return_sequences, return_state, go_backwards,
initial_state, both GRU variants and SimpleRNN's activations; get_config equal to Keras's;
what is not supported yet refused naming the layer and the argument."""

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

T, C, UNITS = 5, 3, 4

LAYERS = {
    "lstm": lambda L, **kw: L.LSTM(UNITS, **kw),
    "gru": lambda L, **kw: L.GRU(UNITS, **kw),
    "gru_reset_before": lambda L, **kw: L.GRU(UNITS, reset_after=False, **kw),
    "simple_rnn": lambda L, **kw: L.SimpleRNN(UNITS, **kw),
    "simple_rnn_relu": lambda L, **kw: L.SimpleRNN(UNITS, activation="relu", **kw),
    "simple_rnn_sigmoid": lambda L, **kw: L.SimpleRNN(UNITS, activation="sigmoid", **kw),
    "simple_rnn_linear": lambda L, **kw: L.SimpleRNN(UNITS, activation=None, **kw),
}
STATES = {"lstm": 2}


def classifier(make, **options):
    """Input (T, C) -> the layer -> (Flatten of a sequence) -> Dense softmax (3 classes)."""
    def build(K):
        inputs = K.Input((T, C))
        x = make(K.layers, **options)(inputs)
        if options.get("return_sequences"):
            x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


@pytest.mark.parametrize("kind", sorted(LAYERS))
@pytest.mark.parametrize("options", [{}, {"return_sequences": True, "go_backwards": True}],
                         ids=["last", "sequences_backwards"])
def test_layer_against_keras(kind, options):
    check_against_keras(classifier(LAYERS[kind], **options), optimizers=("adam",))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_sequences_and_backwards_alone(kind):
    check_against_keras(classifier(LAYERS[kind], return_sequences=True),
                        optimizers=("sgd", "sgd_momentum"))
    check_against_keras(classifier(LAYERS[kind], go_backwards=True), optimizers=("sgd",))


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
@pytest.mark.parametrize("sequences", [False, True])
def test_return_state_feeds_the_head(kind, sequences):
    """[output, h (, c)] all read by the classifier: the states' gradients reach the layer."""
    def build(K):
        inputs = K.Input((T, C))
        output, *states = LAYERS[kind](K.layers, return_state=True,
                                       return_sequences=sequences)(inputs)
        if sequences:
            output = K.layers.Flatten()(output)
        x = K.layers.Concatenate()([output, *states])
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
def test_states_only(kind):
    """The sequence output unread: the backward still runs from the states' gradients."""
    def build(K):
        inputs = K.Input((T, C))
        _, *states = LAYERS[kind](K.layers, return_state=True, go_backwards=True)(inputs)
        x = states[-1]
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
def test_initial_state_from_other_tensors(kind):
    """Initial states computed by Dense layers from a second input: their gradients train
    those layers."""
    def build(K):
        sequence, context = K.Input((T, C)), K.Input((2,))
        states = [K.layers.Dense(UNITS, activation="tanh")(context)
                  for _ in range(STATES.get(kind, 1))]
        x = LAYERS[kind](K.layers)(sequence, initial_state=states)
        return K.Model([sequence, context], K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


@pytest.mark.parametrize("kind", ["lstm", "gru", "gru_reset_before", "simple_rnn"])
def test_without_bias(kind):
    check_against_keras(classifier(LAYERS[kind], use_bias=False), optimizers=("sgd",))


def test_stacked_layers_predict_and_train():
    def build(K):
        inputs = K.Input((T, C))
        x = K.layers.GRU(5, return_sequences=True)(inputs)
        x = K.layers.LSTM(UNITS, go_backwards=True)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("adam",))


def test_multi_output_predict():
    def build(K):
        inputs = K.Input((T, C))
        return K.Model(inputs, K.layers.LSTM(UNITS, return_sequences=True,
                                             return_state=True)(inputs))
    check_against_keras(build, train=False)


@pytest.mark.parametrize("make", [
    lambda L: L.LSTM(3), lambda L: L.GRU(3), lambda L: L.GRU(3, reset_after=False),
    lambda L: L.SimpleRNN(3, activation="relu", return_sequences=True, go_backwards=True),
    lambda L: L.LSTM(2, unit_forget_bias=False, use_bias=False, return_state=True,
                     kernel_regularizer="l2", recurrent_initializer="glorot_uniform",
                     unroll=True, seed=3),
])
def test_config_equals_keras(make):
    ours, theirs = make(kk.layers), make(keras_real.layers)
    ours_config, theirs_config = ours.get_config(), theirs.get_config()
    assert ours_config.pop("name").split("_")[0] == theirs_config.pop("name").split("_")[0]
    assert ours_config == theirs_config
    again = type(ours).from_config(ours.get_config())
    assert again.get_config() == ours.get_config()


def test_weights_live_in_the_cell_as_keras():
    ours, theirs = kk.layers.LSTM(3, name="l"), keras_real.layers.LSTM(3, name="l")
    ours(kk.Input((T, C)))
    theirs(keras_real.Input((T, C)))
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    assert [w.path for w in ours.weights] == [w.path for w in theirs.weights]
    assert ours.cell.kernel.shape == tuple(theirs.cell.kernel.shape)
    # unit_forget_bias: the forget gate's bias starts at one
    np.testing.assert_array_equal(ours.cell.bias.numpy(), np.repeat([0.0, 1.0, 0.0, 0.0], 3))


@pytest.mark.parametrize("make,argument", [
    (lambda L: L.LSTM(3, activation="gelu", name="r"), "activation"),
    (lambda L: L.GRU(3, recurrent_activation="mish", name="r"), "recurrent_activation"),
    (lambda L: L.SimpleRNN(3, activation="hard_silu", name="r"), "activation"),
])
def test_unsupported_arguments_name_layer_and_argument(make, argument):
    with pytest.raises(NotImplementedError, match=rf"'r'.*argument {argument}"):
        make(kk.layers)
    make(keras_real.layers)  # Keras accepts it


def test_positional_arguments_and_kernel_choices_as_keras():
    for make in (lambda L: L.LSTM(3, "tanh", "sigmoid", False, use_cudnn=False),
                 lambda L: L.GRU(3, "tanh", "sigmoid", False, use_cudnn="auto"),
                 lambda L: L.SimpleRNN(3, "relu", False)):
        ours, theirs = make(kk.layers).get_config(), make(keras_real.layers).get_config()
        assert ours["use_bias"] is theirs["use_bias"] is False
        assert ours["activation"] == theirs["activation"]


def test_keras2_spellings():
    layer = kk.layers.LSTM(3, implementation=2, input_length=T, input_dim=C)
    model = kk.models.Sequential([layer])
    assert model.predict(np.zeros((2, T, C), np.float32)).shape == (2, 3)


def test_wrong_initial_state_count_names_the_layer():
    inputs = kk.Input((T, C))
    with pytest.raises(ValueError, match=r"LSTM 'r'.*initial_state"):
        kk.layers.LSTM(3, name="r")(inputs, initial_state=[kk.Input((3,))])


def test_lstm_learns_a_sequence_task():
    """Input (T, C) -> LSTM -> Dense: which of two channels had the larger sum over time."""
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, (512, 12, 2)).astype(np.float32)
    labels = (x[:, :, 0].sum(axis=1) > x[:, :, 1].sum(axis=1)).astype(int)
    y = np.eye(2, dtype=np.float32)[labels]
    model = kk.models.Sequential([kk.Input((12, 2)), kk.layers.LSTM(16),
                                  kk.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=kk.optimizers.Adam(0.01), loss="categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x[:384], y[:384], epochs=15, batch_size=32, verbose=0)
    _, accuracy = model.evaluate(x[384:], y[384:], verbose=0)
    assert accuracy > 0.9


def test_frozen_layer_between_trained_ones():
    """A frozen GRU still passes gradients to the Dense layers computing its initial state."""
    def build(K):
        sequence, context = K.Input((T, C)), K.Input((2,))
        state = K.layers.Dense(UNITS, activation="tanh")(context)
        recurrent = K.layers.GRU(UNITS)
        recurrent.trainable = False
        x = recurrent(sequence, initial_state=[state])
        return K.Model([sequence, context], K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


def test_penalties_and_constraints_on_the_three_weights():
    def build(K):
        inputs = K.Input((T, C))
        x = K.layers.LSTM(UNITS, kernel_regularizer=K.regularizers.L2(0.1),
                          recurrent_regularizer=K.regularizers.L1(0.05),
                          bias_regularizer=K.regularizers.L2(0.2),
                          recurrent_constraint=K.constraints.MaxNorm(0.5),
                          bias_constraint=K.constraints.NonNeg())(inputs)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    # (the losses fit reports hold the penalties, a plain forward's does not)
    check_against_keras(build, optimizers=("sgd",), training_forward=False)


def test_predict_before_training_then_train():
    """An inference plan first lays the weights out for its own primitive; training after it
    still matches Keras."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (6, T, C)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    models = [classifier(LAYERS["lstm"], return_sequences=True)(K) for K in (kk, keras_real)]
    models[1].set_weights(models[0].get_weights())
    for model, K in zip(models, (kk, keras_real), strict=True):
        model.predict(x, verbose=0)
        model.compile(optimizer=K.optimizers.SGD(0.1), loss="categorical_crossentropy")
        model.fit(x, y, epochs=2, batch_size=6, shuffle=False, verbose=0)
    for ours, theirs in zip(models[0].get_weights(), models[1].get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(models[0].predict(x, verbose=0),
                               models[1].predict(x, verbose=0), rtol=1e-4, atol=1e-5)


def test_orthogonal_initializer():
    values = kk.initializers.get("orthogonal", "test")((6, 9))
    np.testing.assert_allclose(values @ values.T, np.eye(6), atol=1e-5)
    tall = kk.initializers.get("Orthogonal", "test")((9, 4))
    np.testing.assert_allclose(tall.T @ tall, np.eye(4), atol=1e-5)
    layer = kk.layers.GRU(3, kernel_initializer="orthogonal")
    assert layer.get_config()["kernel_initializer"] == keras_real.layers.GRU(
        3, kernel_initializer="orthogonal").get_config()["kernel_initializer"]


def test_layer_called_twice_shares_its_weights():
    def build(K):
        first, second = K.Input((T, C)), K.Input((T, C))
        shared = K.layers.GRU(UNITS)
        x = K.layers.Concatenate()([shared(first), shared(second)])
        return K.Model([first, second], K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


def test_summary_lists_the_outputs(capsys):
    inputs = kk.Input((T, C))
    outputs = kk.layers.LSTM(UNITS, return_state=True, name="r")(inputs)
    model = kk.Model(inputs, outputs)
    model.summary()
    text = capsys.readouterr().out
    assert "LSTM" in text and str(model.count_params()) in text


def test_after_a_convolution():
    def build(K):
        inputs = K.Input((8, C))
        x = K.layers.Conv1D(4, 3, activation="relu")(inputs)
        x = K.layers.SimpleRNN(UNITS, return_sequences=True)(x)
        x = K.layers.GRU(UNITS, go_backwards=True)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


def test_regression_on_the_state_and_sequence_outputs():
    """The recurrent outputs are the model's outputs, with mean squared error on each (the
    sequence flattened: kiln's losses take (batch, features))."""
    rng = np.random.default_rng(4)
    x = rng.normal(0, 1, (6, T, C)).astype(np.float32)
    targets = [rng.normal(0, 1, (6, T * UNITS)).astype(np.float32),
               rng.normal(0, 1, (6, UNITS)).astype(np.float32)]

    def build(K):
        inputs = K.Input((T, C))
        sequence, state = K.layers.GRU(UNITS, return_sequences=True, return_state=True,
                                       go_backwards=True)(inputs)
        return K.Model(inputs, [K.layers.Flatten()(sequence), state])

    models = [build(K) for K in (kk, keras_real)]
    models[1].set_weights(models[0].get_weights())
    losses = []
    for model, K in zip(models, (kk, keras_real), strict=True):
        model.compile(optimizer=K.optimizers.SGD(0.1), loss=["mse", "mse"])
        losses.append(model.fit(x, targets, epochs=2, batch_size=6, shuffle=False,
                                verbose=0).history["loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    for ours, theirs in zip(models[0].get_weights(), models[1].get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


def test_gru_forecasts_windows_of_a_time_series():
    """timeseries_dataset_from_array's windows -> GRU -> Dense: the next value of a noisy
    pair of sines, far better than repeating the last value."""
    rng = np.random.default_rng(5)
    steps = np.arange(1200, dtype=np.float32)
    series = (np.sin(steps * 0.11) + 0.5 * np.sin(steps * 0.037)
              + rng.normal(0, 0.02, steps.shape)).astype(np.float32)[:, None]
    window = 16
    dataset = kk.utils.timeseries_dataset_from_array(series[:-window], series[window:, 0],
                                                     sequence_length=window, batch_size=64)
    model = kk.models.Sequential([kk.Input((window, 1)), kk.layers.GRU(16),
                                  kk.layers.Dense(1)])
    model.compile(optimizer=kk.optimizers.Adam(0.01), loss="mse")
    history = model.fit(dataset, epochs=8, verbose=0).history["loss"]
    persistence = float(np.mean((series[window:, 0] - series[window - 1:-1, 0]) ** 2))
    assert history[-1] < 0.2 * persistence


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
def test_input_dropout_predicts_as_keras(kind):
    """dropout acts in training only: predictions equal Keras's (the training forward is
    random, so no training comparison: see tests/ops/test_ops_sequence_dropout.py)."""
    check_against_keras(classifier(LAYERS[kind], dropout=0.4, return_sequences=True),
                        train=False)


def test_input_dropout_gradient_zero_for_dropped_features():
    """A dropped feature of a sample reaches no weight: with one sample and one feature
    dropped, that feature's kernel row gets no gradient (SGD leaves it unchanged)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, T, 64)).astype(np.float32)
    y = np.array([[1.0, 0.0, 0.0]], np.float32)
    inputs = kk.Input((T, 64))
    layer = kk.layers.SimpleRNN(UNITS, dropout=0.5, seed=2)
    model = kk.Model(inputs, kk.layers.Dense(3, activation="softmax")(layer(inputs)))
    model.compile(optimizer=kk.optimizers.SGD(0.5), loss="categorical_crossentropy")
    before = layer.cell.kernel.numpy()
    model.train_on_batch(x, y)
    moved = np.any(layer.cell.kernel.numpy() != before, axis=1)
    assert 0.3 < moved.mean() < 0.7  # about half of the 64 features dropped for this sample


def test_lstm_with_input_dropout_learns():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 6, 4)).astype(np.float32)
    y = (x[:, :, 0].sum(axis=1) > 0).astype(np.int64)
    model = kk.Sequential([kk.Input((6, 4)), kk.layers.LSTM(16, dropout=0.2, seed=0),
                           kk.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=kk.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=30, batch_size=32, verbose=0)
    assert model.evaluate(x, y, verbose=0)[1] > 0.9
