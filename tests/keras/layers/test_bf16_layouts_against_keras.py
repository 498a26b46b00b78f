"""Layouts that let oneDNN run its fast kernels, checked against real Keras 3 (JAX backend): in
float32 value for value, under mixed_bfloat16 with an error of the size of Keras's own bf16
error, in both data formats; and the plans must really run the fast path.

- Under bf16, Dense after Flatten reads the (N, H*W*C) matrix view of the activation's nhwc
  bytes, so oneDNN runs its brgemm (AMX) inner product instead of a jit gemm on a 4D input.
- Under bf16 on AMX a convolution oneDNN has no AMX kernel for (one input channel) writes nhwc,
  the layout the AMX convolution after it reads: no reorder between them on either pass."""

import numpy as np
import pytest
from keras_oracle import check_against_keras, real_keras

from kiln import keras as kk
from kiln.binding import constants as dnnl
from kiln.binding.library import cpu_has
from kiln.binding.memory import MemoryDesc
from kiln.keras import mixed_precision
from kiln.plan.step_list import primitive_names

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]
native = pytest.mark.skipif(not mixed_precision.native_bf16(),
                            reason="this CPU has no native bf16 (avx512_bf16 or AMX)")

FORMATS = ["channels_last", "channels_first"]
BATCH = 16


def image_shape(data_format, channels):
    return (8, 6, channels) if data_format == "channels_last" else (channels, 8, 6)


def build(K, data_format, policy="float32", channels=3):
    """A Conv2D on `channels` (then a second one, on one channel), pooling, Flatten, Dense."""
    K.mixed_precision.set_global_policy(policy)
    try:
        f = {"data_format": data_format}
        inputs = K.Input(image_shape(data_format, channels))
        x = inputs
        if channels == 1:
            x = K.layers.Conv2D(8, 3, padding="same", activation="relu", **f)(x)
        x = K.layers.Conv2D(16, 3, padding="same", activation="relu", **f)(x)
        x = K.layers.MaxPooling2D(2, **f)(x)
        x = K.layers.Flatten(**f)(x)
        x = K.layers.Dense(24, activation="relu")(x)
        model = K.Model(inputs, K.layers.Dense(4, activation="softmax")(x))
    finally:
        K.mixed_precision.set_global_policy("float32")
    model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1),
                  loss="categorical_crossentropy")
    return model


def dense_after_flatten_calls(model, training):
    """{label: (source dims, implementation)} of the first Dense's inner products."""
    plan = model._plans[(training, BATCH)]
    name = next(layer.name for layer in model.layers if type(layer).__name__ == "Dense")
    return {call.label: (call.args[dnnl.ARG_SRC if "data" not in call.label
                                   else dnnl.ARG_DIFF_SRC].desc.dims,
                         primitive_names(call)[1])
            for call in plan.calls
            if primitive_names(call)[0].startswith("inner product")
            and call.label.startswith(f"{name} ")}


def assert_runs_on_the_matrix_view(model, features):
    for training in (True, False):
        calls = dense_after_flatten_calls(model, training)
        expected = 3 if training else 1  # forward, backward weights and data
        assert len(calls) == expected, calls
        for label, (dims, implementation) in calls.items():
            assert dims == (BATCH, features), (label, dims)
            assert "gemm:jit" not in implementation, (label, implementation)


@pytest.mark.parametrize("data_format", FORMATS)
def test_dense_after_flatten_float32_equals_keras(data_format):
    kiln_model, _ = check_against_keras(lambda K: build(K, data_format),
                                        optimizers=("adam",), batch_size=BATCH)
    x = np.random.default_rng(0).normal(size=(BATCH, *kiln_model.input_shape[1:]))
    kiln_model.predict(x.astype(np.float32), batch_size=BATCH, verbose=0)
    kiln_model.fit(x.astype(np.float32), np.eye(4)[np.arange(BATCH) % 4], batch_size=BATCH,
                   verbose=0)
    # float32 keeps the 4D input with 4D weights: oneDNN's jit gemm there beats its brgemm
    # on the matrix view plus a reorder (ops/dense.py)
    for label, (dims, _) in dense_after_flatten_calls(kiln_model, True).items():
        assert len(dims) == 4, (label, dims)


def run(model, weights, x, y):
    model.set_weights(weights)
    predictions = np.asarray(model.predict(x, batch_size=BATCH, verbose=0), np.float32)
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    return predictions, [np.asarray(w, np.float32) for w in model.get_weights()]


def bf16_against_keras(data_format, channels):
    """The kiln model trained under mixed_bfloat16, after checking its error against Keras."""
    keras = real_keras()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2 * BATCH, *image_shape(data_format, channels))).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 2 * BATCH)]
    weights = build(kk, data_format, channels=channels).get_weights()
    reference = run(build(keras, data_format, channels=channels), weights, x, y)
    kiln_model = build(kk, data_format, "mixed_bfloat16", channels)
    kiln = run(kiln_model, weights, x, y)
    keras_bf16 = run(build(keras, data_format, "mixed_bfloat16", channels), weights, x, y)

    def errors(result):
        predictions, trained = result
        return (np.abs(predictions - reference[0]).max(),
                max(np.abs(a - b).max() for a, b in zip(trained, reference[1], strict=True)))

    (kiln_predict, kiln_weights), (keras_predict, keras_weights) = errors(kiln), errors(
        keras_bf16)
    assert kiln_predict <= 2 * keras_predict + 2e-3, (kiln_predict, keras_predict)
    assert kiln_weights <= 3 * keras_weights + 1e-4, (kiln_weights, keras_weights)
    assert max(np.abs(a - b).max() for a, b in zip(kiln[1], weights, strict=True)) > 1e-3
    return kiln_model


@native
@pytest.mark.parametrize("data_format", FORMATS)
def test_dense_after_flatten_bf16_error_is_the_size_of_keras_bf16_error(data_format):
    kiln_model = bf16_against_keras(data_format, 3)
    assert_runs_on_the_matrix_view(kiln_model, 4 * 3 * 16)


@pytest.mark.skipif(not cpu_has(dnnl.cpu_isa_avx512_core_amx), reason="this CPU has no AMX")
@pytest.mark.parametrize("data_format", FORMATS)
def test_one_channel_conv_writes_nhwc_for_the_amx_conv_after_it(data_format):
    kiln_model = bf16_against_keras(data_format, 1)
    first, second = (layer.name for layer in kiln_model.layers[1:3])
    for training in (True, False):
        plan = kiln_model._plans[(training, BATCH)]
        forward = next(call for call in plan.calls if call.label == f"{first} forward")
        assert forward.args[dnnl.ARG_DST].desc == MemoryDesc.with_tag(
            forward.args[dnnl.ARG_DST].desc.dims, dnnl.bf16, dnnl.acdb)
        assert "amx" in primitive_names(
            next(call for call in plan.calls if call.label == f"{second} forward"))[1]
        # nothing between the two convolutions is reordered, on either pass
        reorders = [call.label for call in plan.calls if primitive_names(call)[0] == "reorder"
                    and call.label.startswith((f"{second} input", f"{first} gradient"))]
        assert reorders == [], reorders
