"""What runs on the fused recurrent kernel (ops/recurrent_fused.py) against real Keras 3 (JAX
backend): SimpleRNN, LSTM and GRU (both reset_after) reading masks from Embedding(mask_zero)
and Masking (post- and pre-padded rows, a hole, a fully masked row), with return_sequences,
return_state and go_backwards; Bidirectional with masks; activations oneDNN's cells lack;
recurrent_dropout (inactive in predict; with dropout, one input mask per gate).
Predictions and SGD steps from the same weights."""

import warnings

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

T, UNITS = 5, 3
# post-padded, pre-padded, fully masked, a hole inside, unpadded, one real step
IDS = np.array([[1, 2, 3, 0, 0], [0, 0, 4, 5, 6], [0, 0, 0, 0, 0], [1, 0, 2, 3, 0],
                [1, 1, 1, 1, 1], [2, 0, 0, 0, 0]], dtype=np.int32)

LAYERS = {
    "lstm": lambda L, **kw: L.LSTM(UNITS, **kw),
    "gru": lambda L, **kw: L.GRU(UNITS, **kw),
    "gru_reset_before": lambda L, **kw: L.GRU(UNITS, reset_after=False, **kw),
    "simple_rnn": lambda L, **kw: L.SimpleRNN(UNITS, **kw),
}


@pytest.fixture(autouse=True)
def quiet_masks():
    with warnings.catch_warnings():  # Keras warns when Flatten ends a mask
        warnings.filterwarnings("ignore", message=".*does not support masking")
        yield


def side_by_side(makes, inputs, **options):
    """Every layer of `makes` reads the same input; their outputs (sequences flattened,
    states too with return_state) are concatenated into a Dense softmax: one model (one
    Keras compilation) checks them all."""
    def head(K, outputs):
        parts = []
        for output in outputs:
            output = list(output) if options.get("return_state") else [output]
            if options.get("return_sequences"):
                output[0] = K.layers.Flatten()(output[0])
            parts += output
        return K.layers.Dense(3, activation="softmax")(K.layers.Concatenate()(parts))

    def build(K):
        x = K.Input((T,), dtype="int32") if inputs == "ids" else K.Input((T, 3))
        h = K.layers.Embedding(8, 2, mask_zero=True)(x) if inputs == "ids" else x
        return K.Model(x, head(K, [make(K.layers, **options)(h) for make in makes]))
    return build


@pytest.mark.parametrize("options", [
    {"go_backwards": True}, {"return_sequences": True, "go_backwards": True},
    {"return_sequences": True, "return_state": True, "zero_output_for_mask": True},
], ids=["last_backwards", "sequences_backwards", "sequences_states_zeros"])
def test_masked_layers_against_keras(options):
    """SimpleRNN, LSTM and both GRUs reading Embedding(mask_zero)'s mask."""
    check_against_keras(side_by_side(LAYERS.values(), "ids", **options), inputs=IDS,
                        optimizers=("sgd",))


def test_masking_layer_before_a_gru_and_a_stacked_lstm():
    """Masking's mask reaches a GRU returning sequences, whose output keeps it for an LSTM."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, T, 3)).astype(np.float32)
    x[0, 3:] = 0.0
    x[1, :2] = 0.0
    x[2] = 0.0
    x[3, 2] = 0.0

    def build(K):
        inputs = K.Input((T, 3))
        h = K.layers.Masking(0.0)(inputs)
        h = K.layers.GRU(4, return_sequences=True)(h)
        h = K.layers.LSTM(UNITS, go_backwards=True)(h)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(h))
    check_against_keras(build, inputs=x, optimizers=("sgd",))


def test_bidirectional_with_a_mask():
    """Both directions read the mask; a returned sequence is zero at masked steps (Keras's
    Bidirectional sets zero_output_for_mask); 'concat' of sequences, 'mul' of last outputs,
    states returned."""
    def build(K):
        inputs = K.Input((T,), dtype="int32")
        x = K.layers.Embedding(8, 2, mask_zero=True)(inputs)
        sequences = K.layers.Bidirectional(K.layers.LSTM(UNITS, return_sequences=True))(x)
        last = K.layers.Bidirectional(K.layers.SimpleRNN(UNITS), merge_mode="mul")(x)
        output, forward, backward = K.layers.Bidirectional(
            K.layers.GRU(UNITS, return_state=True, reset_after=False), merge_mode="sum")(x)
        x = K.layers.Concatenate()([K.layers.Flatten()(sequences), last, output, forward,
                                    backward])
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, inputs=IDS, optimizers=("sgd",))


OTHER_ACTIVATIONS = [
    lambda L, **kw: L.LSTM(UNITS, activation="relu", recurrent_activation="hard_sigmoid", **kw),
    lambda L, **kw: L.LSTM(UNITS, activation="softsign", recurrent_activation="linear", **kw),
    lambda L, **kw: L.GRU(UNITS, activation="elu", recurrent_activation="relu", **kw),
    lambda L, **kw: L.GRU(UNITS, reset_after=False, activation="selu",
                          recurrent_activation="hard_sigmoid", **kw),
    lambda L, **kw: L.SimpleRNN(UNITS, activation="softplus", **kw),
    lambda L, **kw: L.SimpleRNN(UNITS, activation="swish", **kw),
]


def test_other_activations_against_keras():
    check_against_keras(side_by_side(OTHER_ACTIVATIONS, "floats", return_sequences=True,
                                     go_backwards=True), optimizers=("sgd",))


def test_recurrent_dropout_is_inactive_in_predict_as_keras():
    """With dropout too (one input mask per gate in training): predictions equal Keras's."""
    makes = [lambda L, make=make, **kw: make(L, dropout=0.4, recurrent_dropout=0.3, seed=1,
                                             **kw)
             for make in LAYERS.values()]
    check_against_keras(side_by_side(makes, "floats"), train=False)


def test_recurrent_dropout_trains_and_config_equals_keras():
    ours = kk.layers.GRU(UNITS, recurrent_dropout=0.25, seed=3)
    theirs = keras_real.layers.GRU(UNITS, recurrent_dropout=0.25, seed=3)
    assert ours.get_config()["recurrent_dropout"] == theirs.get_config()["recurrent_dropout"]
    model = kk.models.Sequential([kk.Input((T, 3)), ours,
                                  kk.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, T, 3)).astype(np.float32)
    y = np.eye(2, dtype=np.float32)[rng.integers(0, 2, 8)]
    first = model.train_on_batch(x, y)
    second = model.train_on_batch(x, y)
    assert np.isfinite(first) and np.isfinite(second) and first != second


def test_output_mask_passes_on_only_with_return_sequences():
    inputs = kk.Input((T,), dtype="int32")
    x = kk.layers.Embedding(8, 2, mask_zero=True)(inputs)
    assert kk.layers.LSTM(2, return_sequences=True)(x)._keras_mask is not None
    output, h, c = kk.layers.LSTM(2, return_state=True)(x)
    assert output._keras_mask is None and h._keras_mask is None


def test_a_masked_stack_of_cells_with_other_activations():
    """RNN(StackedRNNCells) reading Embedding(mask_zero)'s mask: every cell's op skips the
    masked steps (Keras skips the whole stack's step); one cell with an activation oneDNN's
    cells lack."""
    def build(K):
        L = K.layers
        inputs = K.Input((T,), dtype="int32")
        x = L.Embedding(8, 2, mask_zero=True)(inputs)
        cells = [L.GRUCell(3, activation="elu"), L.LSTMCell(UNITS)]
        x = L.RNN(L.StackedRNNCells(cells), return_sequences=True)(x)
        return K.Model(inputs, L.Dense(3, activation="softmax")(L.Flatten()(x)))
    check_against_keras(build, inputs=IDS, optimizers=("sgd",))


# -- dropout with recurrent_dropout: one input mask per gate (Keras's implementation 1) -------
def test_which_cells_draw_an_input_mask_per_gate():
    """As Keras 3: LSTM and GRU with recurrent_dropout (implementation 1) draw one input
    mask per gate inside the recurrent op; with dropout alone, and SimpleRNN always, one
    mask before it."""
    L = kk.layers
    for layer, gates in ((L.LSTM(2, dropout=0.2, recurrent_dropout=0.1), 4),
                         (L.GRU(2, dropout=0.2, recurrent_dropout=0.1, reset_after=False), 3),
                         (L.LSTM(2, dropout=0.2, recurrent_dropout=1.0), 4)):
        layer(kk.Input((T, 3)))
        assert layer.input_dropout is None and layer.op.gate_input_dropout == 0.2
        assert layer.cell.gates == gates
    for layer in (L.LSTM(2, dropout=0.2), L.SimpleRNN(2, dropout=0.2, recurrent_dropout=0.1)):
        layer(kk.Input((T, 3)))
        assert layer.input_dropout is not None and layer.op.gate_input_dropout == 0.0


@pytest.mark.parametrize("kind", ["lstm", "gru", "gru_reset_before"])
def test_each_gate_reads_its_own_input_mask(kind):
    """One sample, SGD: the kernel columns of gate g move for a feature iff gate g's mask kept
    it. So each gate's block drops about `rate` of the 64 features, and two gates' blocks
    disagree on about 2 rate (1 - rate) of them (one shared mask would make them agree)."""
    rate, gates = 0.5, 4 if kind == "lstm" else 3
    x = np.random.default_rng(0).normal(size=(1, T, 64)).astype(np.float32)
    inputs = kk.Input((T, 64))
    layer = LAYERS[kind](kk.layers, dropout=rate, recurrent_dropout=0.2, seed=4)
    model = kk.Model(inputs, kk.layers.Dense(3, activation="softmax")(layer(inputs)))
    model.compile(optimizer=kk.optimizers.SGD(0.5), loss="categorical_crossentropy")
    before = layer.cell.kernel.numpy()
    model.train_on_batch(x, np.array([[1.0, 0.0, 0.0]], np.float32))
    moved = (layer.cell.kernel.numpy() != before).reshape(64, gates, UNITS).any(axis=2)
    assert np.all(0.25 < moved.mean(axis=0)) and np.all(moved.mean(axis=0) < 0.75)
    disagree = [np.mean(moved[:, a] != moved[:, b]) for a in range(gates)
                for b in range(a + 1, gates)]
    assert 0.3 < np.mean(disagree) < 0.7  # 2 rate (1 - rate) = 0.5


def test_a_model_with_dropout_and_recurrent_dropout_trains():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6, 4)).astype(np.float32)
    y = (x[:, :, 0].sum(axis=1) > 0).astype(np.int64)
    inputs = kk.Input((6, 4))
    h = kk.layers.LSTM(8, dropout=0.2, recurrent_dropout=0.2, seed=0,
                       return_sequences=True)(inputs)
    h = kk.layers.GRU(8, dropout=0.2, recurrent_dropout=0.2, seed=1)(h)
    model = kk.Model(inputs, kk.layers.Dense(2, activation="softmax")(h))
    model.compile(optimizer=kk.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy")
    losses = model.fit(x, y, epochs=8, batch_size=32, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.6 * losses[0]
