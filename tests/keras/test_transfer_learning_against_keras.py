"""Transfer learning as keras.io's guide "Transfer learning & fine-tuning" writes it, against
real Keras 3 (JAX backend), written here in the guide's API style (not copied from it):

    base = <a model with BatchNormalization>; base.trainable = False
    x = Rescaling(1 / 127.5, offset=-1)(inputs); x = base(x, training=False)
    GlobalAveragePooling2D, Dropout, Dense(1); compile(Adam(), BinaryCrossentropy(from_logits))
    fit; base.trainable = True; compile(Adam(1e-5)); fit again

The base is a small MobileNetV2-like stack (strided Conv2D, BatchNormalization, ReLU(6),
DepthwiseConv2D, a 1x1 projection and its BatchNormalization) on 8x8 images, so Keras compiles
its train function quickly; keras.applications' own models are checked against Keras in
tests/keras/applications/.

What Keras 3 does, and kiln with it:
- frozen (`base.trainable = False`): a frozen BatchNormalization runs in inference mode, so
  its moving statistics stay as they were, and nothing of the base moves;
- unfrozen: the `training=False` given when the base was called does NOT keep the base in
  inference mode in Keras 3's fit: its functional models pass the outer call's
  `training=True` on to every layer call of the graph, overriding the recorded argument
  (keras/src/models/functional.py `operation_fn`; keras-team/keras#20285), so the unfrozen
  BatchNormalization layers normalize with the batch statistics and update their moving
  ones. The guide's text says otherwise; kiln follows what Keras 3 computes.

The step plan of a frozen base plans no backward call for it at all (the first trainable
layer gets no data gradient either), and the profile shows it.
"""

import numpy as np
import pytest
from keras_oracle import assert_weights_close, build_pair

import kiln.profiler as profiler
from kiln import keras as kk

keras_real = pytest.importorskip("keras")

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

SHAPE = (8, 8, 3)
BASE_LAYERS = ["conv2d", "batch_normalization", "re_lu", "depthwise_conv2d",
               "batch_normalization_1", "re_lu_1", "conv2d_1", "batch_normalization_2"]


def small_base(K):
    L = K.layers
    inputs = K.Input(SHAPE)
    x = L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(inputs)
    x = L.BatchNormalization()(x)
    x = L.ReLU(6.0)(x)
    x = L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    x = L.BatchNormalization()(x)
    x = L.ReLU(6.0)(x)
    x = L.Conv2D(12, 1, use_bias=False)(x)
    x = L.BatchNormalization()(x)
    return K.Model(inputs, x, name="base")


def transfer_model(K, dropout=0.0):
    """The guide's model on top of a frozen base (`model.layers[2]`). Dropout 0 for the
    comparison with Keras: the two sides draw different masks."""
    base = small_base(K)
    base.trainable = False
    inputs = K.Input(SHAPE)
    x = K.layers.Rescaling(scale=1 / 127.5, offset=-1)(inputs)
    x = base(x, training=False)
    x = K.layers.GlobalAveragePooling2D()(x)
    x = K.layers.Dropout(dropout)(x)
    outputs = K.layers.Dense(1)(x)
    return K.Model(inputs, outputs)


def compile_for_binary(model, K, learning_rate):
    model.compile(optimizer=K.optimizers.Adam(learning_rate),
                  loss=K.losses.BinaryCrossentropy(from_logits=True),
                  metrics=[K.metrics.BinaryAccuracy()])


def paths(weights):
    return [w.path for w in weights]


def data(count=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 255, (count, *SHAPE)).astype(np.float32)  # raw pixels, as the guide's
    y = rng.integers(0, 2, (count, 1)).astype(np.float32)
    return x, y


def fit_both(kiln_model, keras_model, x, y, epochs):
    kiln_history = kiln_model.fit(x, y, batch_size=4, epochs=epochs, shuffle=False,
                                  verbose=0).history
    keras_history = keras_model.fit(x, y, batch_size=4, epochs=epochs, shuffle=False,
                                    verbose=0).history
    for key in ("loss", "binary_accuracy"):
        np.testing.assert_allclose(kiln_history[key], keras_history[key], rtol=1e-4,
                                   atol=1e-5, err_msg=key)


def test_frozen_then_fine_tuned_as_keras():
    kiln_model, keras_model, _ = build_pair(transfer_model)
    kiln_base, keras_base = kiln_model.layers[2], keras_model.layers[2]
    assert [layer.name for layer in kiln_base.layers[1:]] == BASE_LAYERS
    x, y = data()
    initial = kiln_model.get_weights()

    # frozen: only the Dense head is trainable; the base's 3 kernels and 3 x 4 BN weights are not
    for model in (kiln_model, keras_model):
        assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 15
    assert paths(kiln_model.trainable_weights) == paths(keras_model.trainable_weights)
    assert paths(kiln_model.non_trainable_weights) == paths(keras_model.non_trainable_weights)
    compile_for_binary(kiln_model, kk, 1e-3)
    compile_for_binary(keras_model, keras_real, 1e-3)
    fit_both(kiln_model, keras_model, x, y, epochs=2)
    assert_weights_close(kiln_model, keras_model, "after the frozen fit")
    frozen = {w.path for w in kiln_base.weights}
    for weight, before, after in zip(kiln_model.weights, initial, kiln_model.get_weights()):
        if weight.path in frozen:  # kernels, gammas, betas and the moving statistics
            np.testing.assert_array_equal(after, before, err_msg=f"frozen {weight.path}")
        else:
            assert not np.array_equal(after, before), f"{weight.path} did not learn"

    # unfrozen: everything trainable but the moving statistics; Adam(1e-5)
    kiln_base.trainable = keras_base.trainable = True
    for model in (kiln_model, keras_model):
        assert len(model.trainable_weights) == 11 and len(model.non_trainable_weights) == 6
    assert paths(kiln_model.trainable_weights) == paths(keras_model.trainable_weights)
    assert paths(kiln_model.non_trainable_weights) == paths(keras_model.non_trainable_weights)
    tuned_from = kiln_model.get_weights()
    compile_for_binary(kiln_model, kk, 1e-5)
    compile_for_binary(keras_model, keras_real, 1e-5)
    fit_both(kiln_model, keras_model, x, y, epochs=1)
    assert_weights_close(kiln_model, keras_model, "after the fine-tuning fit")
    for weight, before, after in zip(kiln_model.weights, tuned_from, kiln_model.get_weights()):
        # every weight moved, the moving statistics too (Keras 3's fit trains the BNs)
        assert not np.array_equal(after, before), f"{weight.path} did not move"
    # predict: inference mode on both sides
    np.testing.assert_allclose(kiln_model.predict(x, verbose=0),
                               keras_model.predict(x, verbose=0), rtol=1e-4, atol=1e-5)


def fresh_model(dropout=0.0):
    kk.backend.clear_session()  # the automatic layer names start afresh
    return transfer_model(kk, dropout)


def backward_calls(model, batch=4):
    """{layer: [labels of its backward calls]} of the model's training plan."""
    calls = {}
    for entry in model._plan(True, batch).entries:
        if entry.phase == "backward":
            calls.setdefault(entry.owner, []).append(entry.label)
    return calls


def test_frozen_layers_plan_no_gradient():
    """The plan computes no weight gradient for a frozen layer, and no data gradient below
    the first trainable layer: with the base frozen, only the head's weight gradient (not
    even the Dense's data gradient); with only the base's last convolution and BN unfrozen,
    nothing below that convolution, whose own backward computes weights only."""
    model = fresh_model(dropout=0.2)
    base = model.layers[2]
    compile_for_binary(model, kk, 1e-3)
    calls = backward_calls(model)
    assert calls == {"dense": ["dense backward weights", "dense/kernel gradient to layout"]}

    # the profile shows the same: no backward time for the base's layers
    x, y = data()
    profile = profiler.profile(model, x, y, batch_size=4, steps=1, warmup=0,
                               peaks={"matmul_gflops": 10.0, "copy_gbps": 10.0})
    assert {row["name"] for row in profile.rows() if row["phase"] == "backward"} == {"dense"}
    layer_seconds = {name: backward for name, _, backward in profile.layer_rows()}
    assert all(layer_seconds.get(name, 0.0) == 0.0 for name in ["rescaling", *BASE_LAYERS])
    assert layer_seconds["dense"] > 0.0

    # fine-tune the top of the base only (the guide's "unfreeze all or part of the base")
    base.trainable = True
    for layer in base.layers[:-2]:
        layer.trainable = False
    compile_for_binary(model, kk, 1e-5)
    calls = backward_calls(model)
    assert set(calls) == {"dense", "dropout", "global_average_pooling2d",
                          "batch_normalization_2", "conv2d_1"}
    assert "conv2d_1 backward weights" in calls["conv2d_1"]
    assert not any("backward data" in label for label in calls["conv2d_1"])


def test_unfrozen_base_plans_weight_gradients_but_no_input_gradient():
    """Unfrozen: every convolution's weight gradient, the data gradients down to the first
    convolution and none for it (nothing below learns); a frozen layer between trainable
    ones passes the data gradient on without computing its weight gradient."""
    model = fresh_model()
    base = model.layers[2]
    base.trainable = True
    compile_for_binary(model, kk, 1e-5)
    calls = backward_calls(model)
    assert "rescaling" not in calls
    assert calls["conv2d"] == ["conv2d backward weights"]
    for layer in ("depthwise_conv2d", "conv2d_1"):
        assert {f"{layer} backward weights", f"{layer} backward data"} <= set(calls[layer])

    base.get_layer("depthwise_conv2d").trainable = False
    compile_for_binary(model, kk, 1e-5)
    calls = backward_calls(model)
    assert "depthwise_conv2d backward data" in calls["depthwise_conv2d"]
    assert not any("weights" in label for label in calls["depthwise_conv2d"])
    assert calls["conv2d"] == ["conv2d backward weights"]
