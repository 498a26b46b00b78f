"""Bidirectional against real Keras 3 (JAX backend), through the shared checker
(keras_oracle.py): every merge mode, sequences or last state, return_state, initial_state, an
explicit backward layer, the `weights` argument; weight names and paths
('bidirectional/forward_lstm/lstm_cell/kernel'), get_config equal to Keras's; bad arguments
refused naming the layer and the argument."""

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
    "simple_rnn": lambda L, **kw: L.SimpleRNN(UNITS, **kw),
}
STATES = {"lstm": 2, "gru": 1, "simple_rnn": 1}


def classifier(kind, merge_mode="concat", **options):
    """Input (T, C) -> Bidirectional -> (Flatten of a sequence) -> Dense softmax (3 classes);
    merge_mode None: the two outputs concatenated by the model."""
    def build(K):
        inputs = K.Input((T, C))
        x = K.layers.Bidirectional(LAYERS[kind](K.layers, **options),
                                   merge_mode=merge_mode)(inputs)
        if merge_mode is None:
            x = K.layers.Concatenate()(x)
        if options.get("return_sequences"):
            x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
@pytest.mark.parametrize("sequences", [True, False], ids=["sequences", "last"])
def test_merge_modes_against_keras(merge_mode, sequences):
    check_against_keras(classifier("lstm", merge_mode, return_sequences=sequences),
                        optimizers=("sgd",))


@pytest.mark.parametrize("kind", ["gru", "simple_rnn"])
def test_other_layers_against_keras(kind):
    check_against_keras(classifier(kind, "concat", return_sequences=True),
                        optimizers=("adam",))
    check_against_keras(classifier(kind, "sum"), optimizers=("sgd",))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("merge_mode", ["concat", None])
def test_return_state_feeds_the_head(kind, merge_mode):
    """[output(s), forward states..., backward states...] all read by the classifier."""
    def build(K):
        inputs = K.Input((T, C))
        outputs = K.layers.Bidirectional(LAYERS[kind](K.layers, return_state=True),
                                         merge_mode=merge_mode)(inputs)
        outputs_count = 2 if merge_mode is None else 1
        assert len(outputs) == outputs_count + 2 * STATES[kind]
        x = K.layers.Concatenate()(outputs)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


def test_initial_state_split_between_directions():
    """initial_state: the forward layer's two states, then the backward layer's, from Dense
    layers (their gradients train those layers)."""
    def build(K):
        sequence, context = K.Input((T, C)), K.Input((2,))
        states = [K.layers.Dense(UNITS, activation="tanh")(context) for _ in range(4)]
        x = K.layers.Bidirectional(K.layers.LSTM(UNITS, return_sequences=True))(
            sequence, initial_state=states)
        x = K.layers.Flatten()(x)
        return K.Model([sequence, context], K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("sgd",))


def test_explicit_backward_layer():
    """A backward GRU without bias beside a forward LSTM, concatenated (Keras computes the
    output shape from the forward layer alone, so the units must agree)."""
    def build(K):
        inputs = K.Input((T, C))
        backward = K.layers.GRU(UNITS, use_bias=False, return_sequences=True, go_backwards=True,
                                name="back")
        x = K.layers.Bidirectional(K.layers.LSTM(UNITS, return_sequences=True),
                                   backward_layer=backward)(inputs)
        x = K.layers.Flatten()(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    kiln_model, _ = check_against_keras(build, optimizers=("sgd",))
    assert kiln_model.layers[1].output.shape == (None, T, 2 * UNITS)


def test_stacked_bidirectional_layers():
    def build(K):
        inputs = K.Input((T, C))
        x = K.layers.Bidirectional(K.layers.GRU(3, return_sequences=True))(inputs)
        x = K.layers.Bidirectional(K.layers.LSTM(UNITS), merge_mode="ave")(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=("adam",))


def test_weights_names_and_order_as_keras():
    ours = kk.layers.Bidirectional(kk.layers.LSTM(3, name="l"), name="b")
    theirs = keras_real.layers.Bidirectional(keras_real.layers.LSTM(3, name="l"), name="b")
    ours(kk.Input((T, C)))
    theirs(keras_real.Input((T, C)))
    assert [w.path for w in ours.weights] == [w.path for w in theirs.weights]
    assert [w.path for w in ours.weights][:2] == ["b/forward_l/lstm_cell/kernel",
                                                  "b/forward_l/lstm_cell/recurrent_kernel"]
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    assert [w.shape for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    assert ours.count_params() == theirs.count_params()


def test_weights_argument_sets_both_layers():
    rng = np.random.default_rng(0)
    template = kk.layers.Bidirectional(kk.layers.GRU(2))
    template(kk.Input((T, C)))
    arrays = [rng.normal(size=w.shape).astype(np.float32) for w in template.weights]
    layer = kk.layers.Bidirectional(kk.layers.GRU(2), weights=arrays)
    layer(kk.Input((T, C)))
    for got, want in zip(layer.get_weights(), arrays, strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(layer.backward_layer.cell.kernel.numpy(), arrays[3])


def _without_build_config(config):
    for key in ("layer", "backward_layer"):
        config[key].pop("build_config", None)
    return config


@pytest.mark.parametrize("make", [
    lambda L: L.Bidirectional(L.LSTM(3, return_sequences=True)),
    lambda L: L.Bidirectional(L.GRU(2, return_state=True), merge_mode=None),
    lambda L: L.Bidirectional(L.SimpleRNN(2), merge_mode="mul",
                              backward_layer=L.SimpleRNN(2, go_backwards=True, name="b")),
])
def test_config_equals_keras(make):
    ours, theirs = make(kk.layers), make(keras_real.layers)
    ours_config = ours.get_config()
    theirs_config = _without_build_config(theirs.get_config())
    assert ours_config.pop("name").split("_")[0] == theirs_config.pop("name").split("_")[0]
    for key in ("layer", "backward_layer"):
        ours_name = ours_config[key]["config"].pop("name")
        assert ours_name.split("_")[0] == theirs_config[key]["config"].pop("name").split("_")[0]
    assert ours_config == theirs_config
    again = kk.layers.Bidirectional.from_config(ours.get_config())
    assert again.get_config() == ours.get_config()


def test_bad_arguments_name_the_layer_and_argument():
    with pytest.raises(ValueError, match=r"'b'.*argument merge_mode"):
        kk.layers.Bidirectional(kk.layers.LSTM(2), merge_mode="max", name="b")
    with pytest.raises(ValueError, match=r"'b'.*argument layer"):
        kk.layers.Bidirectional(kk.layers.Dense(2), name="b")
    with pytest.raises(ValueError, match=r"'b'.*go_backwards"):
        kk.layers.Bidirectional(kk.layers.LSTM(2), name="b",
                                backward_layer=kk.layers.LSTM(2))
    with pytest.raises(ValueError, match=r"'b'.*return_sequences"):
        kk.layers.Bidirectional(kk.layers.LSTM(2), name="b", backward_layer=kk.layers.LSTM(
            2, go_backwards=True, return_sequences=True))


def test_bidirectional_lstm_learns_a_sequence_task():
    """Whether the first step's sign equals the last step's: both ends must be seen."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 6, 1)).astype(np.float32)
    y = (np.sign(x[:, 0, 0]) == np.sign(x[:, -1, 0])).astype(np.int64)
    model = kk.Sequential([kk.Input((6, 1)), kk.layers.Bidirectional(kk.layers.LSTM(8)),
                           kk.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=kk.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, epochs=40, batch_size=32, verbose=0)
    assert history.history["accuracy"][-1] > 0.9


@pytest.mark.parametrize("kind", ["lstm", "gru", "simple_rnn"])
@pytest.mark.parametrize("merge_mode", ["concat", "sum"])
@pytest.mark.parametrize("sequences", [True, False], ids=["sequences", "last"])
def test_one_primitive_equals_two_layers(kind, merge_mode, sequences, monkeypatch):
    """oneDNN's bidirectional directions in one primitive against the two recurrent ops and
    a merge op: predictions, then weights after two training steps from the same weights."""
    from kiln.keras.layers import bidirectional
    from kiln.ops.bidirectional_recurrent import BidirectionalRecurrentOp

    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, T, C)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 6)]
    used, planned = [], BidirectionalRecurrentOp.forward

    def spied(op, *args):
        used.append(op.name)
        return planned(op, *args)

    monkeypatch.setattr(BidirectionalRecurrentOp, "forward", spied)
    models = []
    for one_primitive in (True, False):
        monkeypatch.setattr(bidirectional, "ONE_PRIMITIVE", one_primitive)
        kk.backend.clear_session()
        model = classifier(kind, merge_mode, return_sequences=sequences)(kk)
        model.compile(optimizer=kk.optimizers.SGD(0.5), loss="categorical_crossentropy")
        models.append(model)
    fused, separate = models
    separate.set_weights(fused.get_weights())
    np.testing.assert_allclose(fused.predict(x, verbose=0), separate.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert used, "the one-primitive path did not run"
    for model in models:
        model.fit(x, y, epochs=2, batch_size=6, shuffle=False, verbose=0)
    for got, want in zip(fused.get_weights(), separate.get_weights(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)

