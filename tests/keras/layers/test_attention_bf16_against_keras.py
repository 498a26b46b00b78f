"""A transformer encoder block under mixed_bfloat16 against real Keras 3 (JAX backend) under
the same policy, from the same weights: the attention's projections and score / context
products run on oneDNN's bf16 matmul (bf16 operands, f32 products and weight gradients). Both
are compared with Keras in float32: kiln's bf16 error must be of the size of Keras's own bf16
error, in predictions and in the weights after two SGD steps, and the plan must really run
those matmuls on bf16 operands."""

import numpy as np
import pytest
from keras_oracle import real_keras

from kiln import keras as kk
from kiln.binding import constants as dnnl
from kiln.keras import mixed_precision
from kiln.plan.step_list import primitive_names

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.skipif(not mixed_precision.native_bf16(),
                       reason="this CPU has no native bf16 (avx512_bf16 or AMX)"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

T, FEATURES, HEADS, BATCH = 16, 32, 4, 16


def build(K, policy, causal):
    K.mixed_precision.set_global_policy(policy)
    try:
        inputs = K.Input((T, FEATURES))
        attended = K.layers.MultiHeadAttention(HEADS, FEATURES // HEADS)(
            inputs, inputs, use_causal_mask=causal)
        x = K.layers.LayerNormalization()(K.layers.Add()([inputs, attended]))
        x = K.layers.Dense(2 * FEATURES, activation="relu")(x)
        x = K.layers.GlobalAveragePooling1D()(x)
        model = K.Model(inputs, K.layers.Dense(1, activation="sigmoid")(x))
    finally:
        K.mixed_precision.set_global_policy("float32")
    model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1), loss="binary_crossentropy")
    return model


def run(model, weights, x, y):
    model.set_weights(weights)
    predictions = np.asarray(model.predict(x, batch_size=BATCH, verbose=0), np.float32)
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    return predictions, [np.asarray(w, np.float32) for w in model.get_weights()]


def matmul_source_types(model, training):
    plan = model._plans[(training, BATCH)]
    return {call.args[dnnl.ARG_SRC].desc.data_type for call in plan.calls
            if primitive_names(call)[0] == "matmul" and "backward" not in call.label}


@pytest.mark.parametrize("causal", [False, True], ids=["padding-free", "causal"])
def test_bf16_attention_error_is_the_size_of_keras_bf16_error(causal):
    keras = real_keras()
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2 * BATCH, T, FEATURES)).astype(np.float32)
    y = rng.integers(0, 2, (2 * BATCH, 1)).astype(np.float32)
    weights = build(kk, "float32", causal).get_weights()
    reference = run(build(keras, "float32", causal), weights, x, y)
    kiln_model = build(kk, "mixed_bfloat16", causal)
    kiln = run(kiln_model, weights, x, y)
    keras_bf16 = run(build(keras, "mixed_bfloat16", causal), weights, x, y)

    def errors(result):
        predictions, trained = result
        return (np.abs(predictions - reference[0]).max(),
                max(np.abs(a - b).max() for a, b in zip(trained, reference[1], strict=True)))

    (kiln_predict, kiln_weights), (keras_predict, keras_weights) = errors(kiln), errors(
        keras_bf16)
    assert kiln_predict <= 2 * keras_predict + 2e-3, (kiln_predict, keras_predict)
    assert kiln_weights <= 3 * keras_weights + 1e-4, (kiln_weights, keras_weights)
    assert max(np.abs(a - b).max() for a, b in zip(kiln[1], weights, strict=True)) > 1e-3
    for training in (True, False):
        assert dnnl.bf16 in matmul_source_types(kiln_model, training)
