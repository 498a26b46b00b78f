"""EfficientNet's block pieces against real Keras 3 (JAX backend), float32 and mixed_bfloat16:
a 5x5 depthwise convolution (its weight gradient is kiln's numba kernel), squeeze-and-excitation
(the `Multiply` of an (N, 1, 1, C) gate and the (N, H, W, C) features) and Dropout with a
per-sample noise shape (stochastic depth, outer_scale's kernel). The dropout rate is tiny so
that neither side drops a sample: the random masks cannot agree, and the scale 1 / (1 - rate)
and the gradient path are what is compared; the masks are tested in
tests/ops/test_ops_broadcast_dropout.py.

float32 must match Keras's float32 (predict, training-mode loss, two SGD steps). Under
mixed_bfloat16 kiln's error against Keras's float32 must be of the size of Keras's own bf16
error, and the plan must run the gate multiply (forward and backward), the dropout and the
depthwise weight gradient on bf16 data."""

import numpy as np
import pytest
from keras_oracle import check_against_keras, real_keras

from kiln import keras as kk
from kiln.binding import constants as dnnl
from kiln.keras import mixed_precision
from kiln.ops.depthwise_weights import depthwise_weights_kernel
from kiln.ops.gate_gradient import gate_gradient_kernel
from kiln.ops.outer_scale import outer_scale_bf16

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

BATCH = 8


def block(K):
    """An MBConv block's shape: expand, 5x5 depthwise, squeeze-and-excitation, project,
    stochastic depth, residual add; then a softmax head."""
    L = K.layers
    inputs = K.Input((10, 10, 16))
    x = L.Conv2D(32, 1, use_bias=False)(inputs)
    x = L.Activation("swish")(L.BatchNormalization()(x))
    x = L.DepthwiseConv2D(5, padding="same")(x)  # with a bias: its gradient too
    x = L.Activation("swish")(L.BatchNormalization()(x))
    se = L.Reshape((1, 1, 32))(L.GlobalAveragePooling2D()(x))
    se = L.Conv2D(8, 1, activation="swish")(se)
    se = L.Conv2D(32, 1, activation="sigmoid")(se)
    x = L.Multiply()([x, se])
    x = L.BatchNormalization()(L.Conv2D(16, 1, use_bias=False)(x))
    x = L.Dropout(1e-6, noise_shape=(None, 1, 1, 1))(x)
    x = L.Add()([x, inputs])
    x = L.GlobalAveragePooling2D()(x)
    return K.Model(inputs, L.Dense(4, activation="softmax")(x))


def test_float32_block_trains_like_keras():
    check_against_keras(block, optimizers=["sgd"])


def build(K, policy):
    K.mixed_precision.set_global_policy(policy)
    try:
        model = block(K)
    finally:
        K.mixed_precision.set_global_policy("float32")
    model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1),
                  loss="categorical_crossentropy")
    return model


def run(model, weights, x, y):
    model.set_weights(weights)
    predictions = np.asarray(model.predict(x, batch_size=BATCH, verbose=0), np.float32)
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    return predictions, [np.asarray(w, np.float32) for w in model.get_weights()]


@pytest.mark.skipif(not mixed_precision.native_bf16(),
                    reason="this CPU has no native bf16 (avx512_bf16 or AMX)")
def test_bf16_block_error_is_the_size_of_keras_bf16_error():
    keras = real_keras()
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2 * BATCH, 10, 10, 16)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 2 * BATCH)]
    weights = build(kk, "float32").get_weights()
    reference = run(build(keras, "float32"), weights, x, y)
    kiln_model = build(kk, "mixed_bfloat16")
    kiln = run(kiln_model, weights, x, y)
    keras_bf16 = run(build(keras, "mixed_bfloat16"), weights, x, y)

    def errors(result):
        predictions, trained = result
        return (np.abs(predictions - reference[0]).max(),
                max(np.abs(a - b).max() for a, b in zip(trained, reference[1], strict=True)))

    (kiln_predict, kiln_weights), (keras_predict, keras_weights) = errors(kiln), errors(
        keras_bf16)
    assert kiln_predict <= 2 * keras_predict + 2e-3, (kiln_predict, keras_predict)
    assert kiln_weights <= 3 * keras_weights + 1e-4, (kiln_weights, keras_weights)
    assert max(np.abs(a - b).max() for a, b in zip(kiln[1], weights, strict=True)) > 1e-3

    calls = kiln_model._plans[(True, BATCH)].calls
    gate = [call for call in calls
            if call.label.startswith("multiply") and call.label.endswith(" forward")]
    assert len(gate) == 1 and gate[0].args[dnnl.ARG_SRC].desc.data_type == dnnl.bf16
    assert not gate[0].primitive.pd.implementation.startswith("ref")
    assert gate_gradient_kernel in [getattr(call, "function", None) for call in calls]
    dropout = [getattr(call, "function", None) for call in calls
               if call.label.startswith("dropout") and call.label.endswith(("forward",
                                                                           "backward"))]
    assert dropout == [outer_scale_bf16, outer_scale_bf16]
    weights = [call for call in calls if call.label.endswith("backward weights")
               and getattr(call, "function", None) is depthwise_weights_kernel]
    assert len(weights) == 1 and weights[0].arguments[-1] is True  # on the bf16 bits
