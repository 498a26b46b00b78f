"""SimpleRNN, LSTM, GRU and Bidirectional under mixed_bfloat16 against real Keras 3 (JAX
backend) under the same policy, from the same weights: on a CPU with native bf16 kiln runs
oneDNN's bf16 RNN primitives (bf16 sequences, h and weights; c, bias and gradients f32), Keras
computes its cells in bf16 too. Both are compared with Keras in float32: kiln's bf16 error
must be of the size of Keras's own bf16 error, in predictions and in the weights after two
SGD steps. Training plans keep the primitives in f32 by default (oneDNN 3.2's bf16 backward
is slower, recurrent_cells.BF16_TRAINING); the comparison turns bf16 training on so that the
bf16 backward is checked too. The plans must really run the primitive in the data type
chosen (f32 for the shapes oneDNN 3.2 cannot run in bf16)."""

import numpy as np
import pytest
from keras_oracle import real_keras

from kiln import keras as kk
from kiln.binding import constants as dnnl
from kiln.keras import mixed_precision
from kiln.ops import recurrent_cells
from kiln.ops.recurrent_cells import amx_k_tails
from kiln.plan.step_list import primitive_names

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.skipif(not mixed_precision.native_bf16(),
                       reason="this CPU has no native bf16 (avx512_bf16 or AMX)"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

T, VOCAB, FEATURES, UNITS, BATCH = 12, 50, 32, 32, 32

RNN_FORWARD = {f"{cell} forward" for cell in ("vanilla_rnn", "lstm", "gru", "lbr_gru")}
CASES = {
    "lstm_sequences_backwards": lambda L: L.LSTM(UNITS, return_sequences=True,
                                                 go_backwards=True),
    "gru_last": lambda L: L.GRU(UNITS),
    "gru_reset_before_sequences": lambda L: L.GRU(UNITS, reset_after=False,
                                                  return_sequences=True),
    "simple_rnn_last": lambda L: L.SimpleRNN(UNITS),
    "bidirectional_lstm_sequences": lambda L: L.Bidirectional(
        L.LSTM(UNITS, return_sequences=True)),
    "bidirectional_gru_last_sum": lambda L: L.Bidirectional(L.GRU(UNITS), merge_mode="sum"),
}


def build(K, make, policy):
    K.mixed_precision.set_global_policy(policy)
    try:
        inputs = K.Input((T,), dtype="int32")
        x = K.layers.Embedding(VOCAB, FEATURES)(inputs)
        x = make(K.layers)(x)
        if len(x.shape) == 3:
            x = K.layers.GlobalMaxPooling1D()(x)
        model = K.Model(inputs, K.layers.Dense(1, activation="sigmoid")(x))
    finally:
        K.mixed_precision.set_global_policy("float32")
    model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1), loss="binary_crossentropy")
    return model


def predictions_and_trained_weights(model, weights, x, y):
    model.set_weights(weights)
    predictions = np.asarray(model.predict(x, batch_size=BATCH, verbose=0), np.float32)
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    return predictions, [np.asarray(w, np.float32) for w in model.get_weights()]


def recurrent_data_types(model, training=True):
    """The data types the plan's RNN primitives read their input sequence in."""
    plan = model._plans[(training, BATCH)]
    return {call.args[dnnl.ARG_SRC_LAYER].desc.data_type for call in plan.calls
            if primitive_names(call)[0] in RNN_FORWARD}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bf16_error_is_the_size_of_keras_bf16_error(case, monkeypatch):
    monkeypatch.setattr(recurrent_cells, "BF16_TRAINING", True)
    keras = real_keras()
    rng = np.random.default_rng(3)
    x = rng.integers(1, VOCAB, (2 * BATCH, T))
    y = rng.integers(0, 2, (2 * BATCH, 1)).astype(np.float32)
    weights = build(kk, CASES[case], "float32").get_weights()
    reference = predictions_and_trained_weights(build(keras, CASES[case], "float32"),
                                                weights, x, y)
    kiln_bf16 = build(kk, CASES[case], "mixed_bfloat16")
    kiln = predictions_and_trained_weights(kiln_bf16, weights, x, y)
    keras_bf16 = predictions_and_trained_weights(build(keras, CASES[case], "mixed_bfloat16"),
                                                 weights, x, y)

    def errors(result):
        predictions, trained = result
        return (np.abs(predictions - reference[0]).max(),
                max(np.abs(a - b).max() for a, b in zip(trained, reference[1], strict=True)))

    (kiln_predict, kiln_weights), (keras_predict, keras_weights) = errors(kiln), errors(
        keras_bf16)
    # bf16 rounds the sigmoid output itself to 2^-9 near 0.5: that much is always allowed
    assert kiln_predict <= 2 * keras_predict + 2e-3, (kiln_predict, keras_predict)
    assert kiln_weights <= 3 * keras_weights + 1e-4, (kiln_weights, keras_weights)
    # and the weights moved: the comparison is about an update, not two copies of the start
    assert max(np.abs(a - b).max() for a, b in zip(kiln[1], weights, strict=True)) > 1e-3
    bidirectional_final_states = case == "bidirectional_gru_last_sum"
    expected = dnnl.f32 if bidirectional_final_states else dnnl.bf16
    assert recurrent_data_types(kiln_bf16) == {expected}
    assert recurrent_data_types(kiln_bf16, training=False) == {expected}


def test_by_default_inference_runs_bf16_and_training_f32():
    model = build(kk, lambda L: L.LSTM(UNITS), "mixed_bfloat16")
    x = np.random.default_rng(5).integers(1, VOCAB, (BATCH, T))
    predictions = model.predict(x, batch_size=BATCH, verbose=0)
    model.fit(x, np.ones((BATCH, 1), np.float32), batch_size=BATCH, verbose=0)
    assert recurrent_data_types(model, training=False) == {dnnl.bf16}
    assert recurrent_data_types(model) == {dnnl.f32}
    assert np.isfinite(predictions).all()


def test_shapes_oneDNN_cannot_run_in_bf16_run_in_f32():
    """oneDNN 3.2's AMX bf16 RNN kernels crash on K tails (48 units on 32 channels); such a
    layer runs its primitive in f32 between conversions, and still trains."""
    assert amx_k_tails(32, 48) and amx_k_tails(20, 32) and not amx_k_tails(32, 128)
    assert not amx_k_tails(1, 48)  # an odd K block: oneDNN's non-AMX bf16 kernels
    model = build(kk, lambda L: L.LSTM(48), "mixed_bfloat16")
    rng = np.random.default_rng(4)
    x = rng.integers(1, VOCAB, (BATCH, T))
    before = model.get_weights()
    model.predict(x, batch_size=BATCH, verbose=0)
    model.fit(x, np.ones((BATCH, 1), np.float32), batch_size=BATCH, verbose=0)
    assert recurrent_data_types(model, training=False) == {dnnl.f32}
    assert max(np.abs(a - b).max() for a, b in zip(model.get_weights(), before)) > 1e-4
