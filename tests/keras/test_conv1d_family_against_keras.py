"""The 1D convolution family against real Keras 3 (JAX backend), through the shared checker
(keras_oracle.py): DepthwiseConv1D, SeparableConv1D and Conv1DTranspose (strides, dilation,
depth multipliers, output_padding): weight names, shapes and order, predictions and training
steps from the same weights, in both data formats; get_config equal to Keras's; the arguments
Keras refuses refused with the layer and the argument named."""

import keras_oracle
import pytest
from keras_oracle import build_pair, check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"


def classifier(make_layers, steps, channels, data_format):
    """Input -> the layers under test -> Flatten -> Dense softmax (3 classes)."""
    def build(K):
        inputs = K.Input((steps, channels) if data_format == CL else (channels, steps))
        x = inputs
        for layer in make_layers(K.layers, dict(data_format=data_format)):
            x = layer(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


# name -> (layers on L with data-format kwargs f, input (steps, channels))
MODELS = {
    "depthwise": (lambda L, f: [
        L.DepthwiseConv1D(3, padding="same", activation="relu", **f),
        L.DepthwiseConv1D(3, strides=2, depth_multiplier=2, use_bias=False, **f)], (9, 3)),
    "depthwise-dilated": (lambda L, f: [
        L.DepthwiseConv1D(2, dilation_rate=2, depth_multiplier=3, activation="tanh", **f)],
        (8, 2)),
    # Keras takes strides with dilation in the depthwise layers (not in Conv1D)
    "depthwise-strided-dilated": (lambda L, f: [
        L.DepthwiseConv1D(2, strides=2, dilation_rate=2, padding="same", **f)], (9, 3)),
    "separable": (lambda L, f: [
        L.SeparableConv1D(5, 3, padding="same", depth_multiplier=2, activation="relu", **f),
        L.SeparableConv1D(3, 2, strides=2, use_bias=False, **f)], (9, 3)),
    "separable-dilated": (lambda L, f: [
        L.SeparableConv1D(4, 3, dilation_rate=2, activation="sigmoid", **f)], (9, 2)),
    "transpose-valid-s2": (lambda L, f: [
        L.Conv1DTranspose(4, 2, strides=2, activation="relu", **f)], (4, 3)),
    "transpose-same-s2-k3": (lambda L, f: [
        L.Conv1DTranspose(3, 3, strides=2, padding="same", **f)], (4, 2)),
    "transpose-output-padding": (lambda L, f: [
        L.Conv1DTranspose(3, 3, strides=2, output_padding=1, **f),
        L.Conv1DTranspose(2, 3, strides=3, padding="same", output_padding=2,
                          activation="sigmoid", **f)], (3, 2)),
    # 16 input channels and more: the weight gradient comes in oneDNN's own layouts
    # (conv2d.OWN_LAYOUT_BACKWARD_WEIGHTS_CHANNELS), the input and gradient reordered there
    "conv1d-many-channels": (lambda L, f: [
        L.Conv1D(18, 3, activation="relu", **f),
        L.Conv1D(4, 2, padding="same", **f)], (9, 20)),
    "transpose-dilated": (lambda L, f: [L.Conv1DTranspose(3, 3, dilation_rate=2, **f)],
                          (4, 2)),
    # a kernel of 1 with strides 2: oneDNN 3.2's jit_1x1 backward-weights is wrong in nhwc
    "transpose-k1-s2": (lambda L, f: [L.Conv1DTranspose(3, 1, strides=2, **f)], (4, 3)),
}

# two optimizers in channels_last, one in channels_first
CASES = [pytest.param(name, data_format, opt, id=f"{name}-{data_format}")
         for name in MODELS for data_format, opt in ((CL, ("sgd", "adam")), (CF, ("sgd",)))]


@pytest.mark.parametrize("name,data_format,optimizers", CASES)
def test_layer_matches_keras(name, data_format, optimizers):
    make_layers, (steps, channels) = MODELS[name]
    kiln_model, keras_model = check_against_keras(
        classifier(make_layers, steps, channels, data_format), optimizers=optimizers)
    for ours, theirs in zip(kiln_model.layers, keras_model.layers, strict=True):
        assert tuple(ours.output.shape) == tuple(theirs.output.shape), ours.name


# -- get_config: what Keras 3 writes -----------------------------------------------------------
CONFIG_LAYERS = {
    "DepthwiseConv1D": lambda L: L.DepthwiseConv1D(3, strides=2, depth_multiplier=2,
                                                   padding="same", use_bias=False,
                                                   depthwise_regularizer="l2"),
    "SeparableConv1D": lambda L: L.SeparableConv1D(4, 3, dilation_rate=2, activation="tanh",
                                                   pointwise_constraint="non_neg",
                                                   depthwise_regularizer="l2"),
    "Conv1DTranspose": lambda L: L.Conv1DTranspose(4, 3, strides=2, output_padding=1,
                                                   padding="same", kernel_regularizer="l2"),
}


@pytest.mark.parametrize("name", list(CONFIG_LAYERS))
def test_get_config_equals_keras(name):
    keras = keras_oracle.real_keras()
    configs = []
    for K in (kk, keras):
        K.backend.clear_session()
        layer = CONFIG_LAYERS[name](K.layers)
        layer(K.Input((9, 6)))
        configs.append(layer.get_config())
    assert configs[0] == configs[1]
    rebuilt = CONFIG_LAYERS[name](kk.layers).from_config(configs[1])
    assert type(rebuilt).__name__ == name
    assert rebuilt.get_config() == configs[1]


def test_weight_names_and_shapes_match_keras():
    """Keras 3's weight names and shapes: DepthwiseConv1D 'kernel' (k, in, m), SeparableConv1D
    depthwise_kernel (k, in, m) / pointwise_kernel (1, in * m, filters) / bias,
    Conv1DTranspose (k, filters, in)."""
    def build(K):
        L = K.layers
        inputs = K.Input((8, 4))
        x = L.DepthwiseConv1D(3, depth_multiplier=2)(inputs)
        x = L.SeparableConv1D(5, 3)(x)
        return K.Model(inputs, L.Conv1DTranspose(3, 2, strides=2)(x))
    kiln_model, _, _ = build_pair(build)
    assert [(w.path, w.shape) for w in kiln_model.weights] == [
        ("depthwise_conv1d/kernel", (3, 4, 2)), ("depthwise_conv1d/bias", (8,)),
        ("separable_conv1d/depthwise_kernel", (3, 8, 1)),
        ("separable_conv1d/pointwise_kernel", (1, 8, 5)), ("separable_conv1d/bias", (5,)),
        ("conv1d_transpose/kernel", (2, 3, 5)), ("conv1d_transpose/bias", (3,))]


# -- what Keras refuses -------------------------------------------------------------------------
BAD = [
    (lambda L: L.DepthwiseConv1D(3, depth_multiplier=0), "DepthwiseConv1D",
     "depth_multiplier"),
    (lambda L: L.DepthwiseConv1D(3, padding="causal"), "DepthwiseConv1D", "padding"),
    (lambda L: L.DepthwiseConv1D((3, 3)), "DepthwiseConv1D", "kernel_size"),
    (lambda L: L.SeparableConv1D(0, 3), "SeparableConv1D", "filters"),
    (lambda L: L.SeparableConv1D(4, 3, strides=0), "SeparableConv1D", "strides"),
    (lambda L: L.SeparableConv1D(4, 3, padding="full"), "SeparableConv1D", "padding"),
    (lambda L: L.Conv1DTranspose(4, 3, strides=2, output_padding=2), "Conv1DTranspose",
     "output_padding"),
    (lambda L: L.Conv1DTranspose(4, 3, strides=2, dilation_rate=2), "Conv1DTranspose",
     "dilation_rate"),
    (lambda L: L.Conv1DTranspose(4, 0), "Conv1DTranspose", "kernel_size"),
]


@pytest.mark.parametrize("make,layer,argument", BAD)
def test_bad_arguments_are_refused_as_keras_does(make, layer, argument):
    keras = keras_oracle.real_keras()
    with pytest.raises(ValueError):
        make(keras.layers)(keras.Input((9, 4)))
    with pytest.raises(ValueError, match=f"{layer} '.*'.*{argument}"):
        make(kk.layers)


@pytest.mark.parametrize("make,layer", [
    (lambda L: L.DepthwiseConv1D(5), "DepthwiseConv1D"),
    (lambda L: L.SeparableConv1D(2, 3, dilation_rate=2), "SeparableConv1D"),
    (lambda L: L.Conv1D(2, 5), "Conv1D"),
])
def test_inputs_shorter_than_the_kernel_are_refused(make, layer):
    with pytest.raises(ValueError, match=f"{layer} '.*': an input of 4 steps is shorter"):
        make(kk.layers)(kk.Input((4, 3)))


def test_a_model_of_the_family_crosses_to_keras_and_back():
    """kiln's model config builds the same model in Keras (same weights, predictions) and
    Keras's builds it back in kiln."""
    import json

    import numpy as np
    keras = keras_oracle.real_keras()

    def build(K):
        L = K.layers
        inputs = K.Input((8, 3))
        x = L.DepthwiseConv1D(3, padding="same", depth_multiplier=2)(inputs)
        x = L.SeparableConv1D(4, 3, dilation_rate=2, padding="same", activation="relu")(x)
        x = L.Conv1DTranspose(2, 3, strides=2, output_padding=1)(x)
        return K.Model(inputs, L.Flatten()(x))

    ours, _, x = build_pair(build)
    theirs = keras.Model.from_config(json.loads(json.dumps(ours.get_config())))
    theirs.set_weights(ours.get_weights())
    expected = ours.predict(x, verbose=0)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    clone = kk.Model.from_config(json.loads(json.dumps(theirs.get_config())))
    clone.set_weights(ours.get_weights())
    np.testing.assert_allclose(clone.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("data_format", [CL, CF])
def test_the_1d_layers_run_no_reference_kernels(data_format):
    """The primitives of a training step through every 1D layer (the process-wide cache is
    emptied first, so only this model's are looked at) are oneDNN's real kernels: the
    depthwise convolutions its depthwise ones, none its reference kernels."""
    import numpy as np

    from kiln.binding.primitive import primitive_cache
    primitive_cache.clear()
    L, f = kk.layers, dict(data_format=data_format)
    inputs = kk.Input((32, 16) if data_format == CL else (16, 32))
    x = L.Conv1D(16, 3, padding="same", activation="relu", **f)(inputs)
    x = L.DepthwiseConv1D(3, padding="same", **f)(x)
    x = L.SeparableConv1D(16, 3, strides=2, padding="same", **f)(x)
    x = L.MaxPooling1D(2, **f)(x)
    x = L.AveragePooling1D(2, padding="same", **f)(x)
    x = L.Conv1DTranspose(16, 2, strides=2, **f)(x)
    x = L.UpSampling1D(2)(L.ZeroPadding1D(1, **f)(x))
    x = L.SpatialDropout1D(0.2)(L.Cropping1D((1, 1))(x))
    x = L.GlobalAveragePooling1D(**f)(x)
    model = kk.Model(inputs, L.Dense(2, activation="softmax")(L.RepeatVector(1)(x)[:, 0]))
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    x_data = np.random.default_rng(0).normal(size=(4, *inputs.shape[1:])).astype(np.float32)
    model.fit(x_data, np.eye(2, dtype=np.float32)[[0, 1, 0, 1]], epochs=1, verbose=0)
    implementations = {str(key[0]): primitive.pd.implementation
                       for key, primitive in primitive_cache._entries.items()
                       if isinstance(key, tuple)}
    assert any(name.startswith(("pool", "pooling")) for name in implementations)
    for name, implementation in implementations.items():
        assert not implementation.startswith("ref"), (name, implementation)
    if data_format == CL:
        assert any("_dw" in implementation for implementation in implementations.values())
