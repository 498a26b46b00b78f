"""The convolution family against real Keras 3 (JAX backend), through the shared checker
(keras_oracle.py): Conv2D with dilation_rate and groups, DepthwiseConv2D, SeparableConv2D,
Conv2DTranspose and Conv1D: weight names, shapes and order, predictions and training steps from
the same weights, in both data formats; get_config equal to Keras's; the arguments Keras
refuses refused with the layer, the argument and the accepted values named."""

import keras_oracle
import numpy as np
import pytest
from keras_oracle import build_pair, check_against_keras

from kiln import keras as kk

keras_real = pytest.importorskip("keras")  # keras_oracle chose the JAX backend

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"


def image_shape(height, width, channels, data_format):
    return (height, width, channels) if data_format == CL else (channels, height, width)


def classifier(make_layers, shape, data_format):
    """Input -> the layers under test -> Flatten -> Dense softmax (3 classes)."""
    def build(K):
        inputs = K.Input(image_shape(*shape, data_format))
        x = inputs
        for layer in make_layers(K.layers, dict(data_format=data_format)):
            x = layer(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


# name -> (layers on L with data-format kwargs f, input (H, W, C))
MODELS = {
    "conv2d-dilated": (lambda L, f: [L.Conv2D(4, 3, dilation_rate=2, padding="same",
                                              activation="relu", **f)], (7, 6, 3)),
    "conv2d-dilated-valid-2x1": (lambda L, f: [L.Conv2D(3, (2, 3), dilation_rate=(2, 1),
                                                        **f)], (7, 6, 2)),
    "conv2d-groups": (lambda L, f: [L.Conv2D(6, 3, groups=2, strides=2, padding="same",
                                             activation="tanh", **f),
                                    L.Conv2D(4, 1, groups=2, **f)], (7, 6, 4)),
    "depthwise": (lambda L, f: [L.DepthwiseConv2D(3, padding="same", activation="relu", **f),
                                L.DepthwiseConv2D(3, strides=2, depth_multiplier=2,
                                                  use_bias=False, **f)], (8, 7, 3)),
    "depthwise-dilated-relu6-bn": (lambda L, f: [
        L.DepthwiseConv2D(3, dilation_rate=2, padding="same", use_bias=False, **f),
        L.BatchNormalization(axis=-1 if f["data_format"] == CL else 1),
        L.Activation("relu6")], (7, 7, 4)),
    # EfficientNet's 5x5 (the weight gradient is kiln's numba kernel: oneDNN's depthwise
    # backward-weights takes undilated 3x3 only); 20 channels pad a block of 16
    "depthwise-5x5": (lambda L, f: [
        L.DepthwiseConv2D(5, padding="same", activation="relu", **f),
        L.DepthwiseConv2D(5, strides=2, padding="same", use_bias=False, **f)], (9, 8, 20)),
    # Keras takes strides with dilation in the depthwise layers (not in Conv2D)
    "depthwise-strided-dilated": (lambda L, f: [
        L.SeparableConv2D(4, 3, strides=2, dilation_rate=2, padding="same", **f),
        L.DepthwiseConv2D(2, strides=2, dilation_rate=2, **f)], (9, 10, 3)),
    "separable": (lambda L, f: [L.SeparableConv2D(5, 3, padding="same", depth_multiplier=2,
                                                  activation="relu", **f),
                                L.SeparableConv2D(3, 2, strides=2, use_bias=False, **f)],
                  (7, 6, 3)),
    "transpose-valid-s2": (lambda L, f: [L.Conv2DTranspose(4, 2, strides=2, activation="relu",
                                                           **f)], (3, 4, 3)),
    "transpose-same-s2-3x3": (lambda L, f: [L.Conv2DTranspose(3, 3, strides=2, padding="same",
                                                              **f)], (3, 3, 2)),
    "transpose-output-padding": (lambda L, f: [
        L.Conv2DTranspose(3, 3, strides=2, padding="valid", output_padding=1, **f),
        L.Conv2DTranspose(2, 3, strides=(2, 3), padding="same", output_padding=(0, 2),
                          activation="sigmoid", **f)], (3, 2, 2)),
    "transpose-dilated": (lambda L, f: [L.Conv2DTranspose(3, 3, dilation_rate=2, **f)],
                          (3, 3, 2)),
}

# the first two in both formats with two optimizers; the rest one optimizer per format
CASES = [pytest.param(name, data_format, opt, id=f"{name}-{data_format}")
         for name in MODELS for data_format, opt in ((CL, ("sgd", "adam")), (CF, ("adam",)))]


@pytest.mark.parametrize("name,data_format,optimizers", CASES)
def test_layer_matches_keras(name, data_format, optimizers):
    make_layers, shape = MODELS[name]
    if "relu6" in name:
        try:
            kk.activations.get_name("relu6", "test")
        except ValueError:
            pytest.skip("relu6 is not a kiln activation yet")
    check_against_keras(classifier(make_layers, shape, data_format), optimizers=optimizers)


def conv1d_stack(K, data_format, first_activation, last_activation):
    """Conv1D layers (causal and dilated, strided and grouped, same) on a 9-step input:
    (inputs, the 4-step output)."""
    L = K.layers
    f = dict(data_format=data_format)
    inputs = K.Input((9, 3) if data_format == CL else (3, 9))
    x = L.Conv1D(4, 3, padding="causal", dilation_rate=2, activation=first_activation,
                 **f)(inputs)
    x = L.Conv1D(6, 2, strides=2, groups=2, **f)(x)                          # 4 steps
    return inputs, L.Conv1D(5, 3, padding="same", activation=last_activation, **f)(x)


def conv1d_model(data_format):
    """The Conv1D stack, then a Conv1D whose kernel spans all steps."""
    def build(K):
        inputs, x = conv1d_stack(K, data_format, "relu", "tanh")
        return K.Model(inputs, K.layers.Conv1D(3, 4, data_format=data_format)(x))  # 1 step
    return build


@pytest.mark.parametrize("data_format", [CL, CF])
def test_conv1d_matches_keras(data_format):
    """Predictions and weights of a model ending on a 3D output (the training step of such a
    model is in the next test, through a classifier head)."""
    kiln_model, keras_model = check_against_keras(conv1d_model(data_format), train=False)
    assert tuple(kiln_model.outputs[0].shape) == tuple(keras_model.outputs[0].shape)


@pytest.mark.parametrize("data_format", [CL, CF])
def test_conv1d_model_trains_like_keras(data_format):
    """The Conv1D stack as a model: Flatten (in Keras's (steps, channels) order, so the Dense
    after it has the same kernel in both formats) and a softmax Dense, then the same losses
    and weights as Keras after SGD and Adam steps from the same weights."""
    def build(K):
        inputs, x = conv1d_stack(K, data_format, "tanh", "sigmoid")
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    check_against_keras(build, optimizers=["sgd", "adam"])


# -- get_config: what Keras 3 writes -----------------------------------------------------------
CONFIG_LAYERS = {
    "Conv2D": lambda L: L.Conv2D(6, (3, 2), dilation_rate=2, groups=3, activation="relu",
                                 kernel_regularizer="l2"),
    "DepthwiseConv2D": lambda L: L.DepthwiseConv2D(3, strides=2, depth_multiplier=2,
                                                   padding="same", use_bias=False,
                                                   depthwise_regularizer="l2"),
    "SeparableConv2D": lambda L: L.SeparableConv2D(4, 3, dilation_rate=2, activation="tanh",
                                                   pointwise_constraint="non_neg"),
    "Conv2DTranspose": lambda L: L.Conv2DTranspose(4, 3, strides=2, output_padding=1,
                                                   padding="same"),
    "Conv1D": lambda L: L.Conv1D(4, 3, padding="causal", dilation_rate=2),
}


@pytest.mark.parametrize("name", list(CONFIG_LAYERS))
def test_get_config_equals_keras(name):
    keras = keras_oracle.real_keras()
    shape = (9, 6) if name == "Conv1D" else (8, 8, 6)
    configs = []
    for K in (kk, keras):
        K.backend.clear_session()
        layer = CONFIG_LAYERS[name](K.layers)
        layer(K.Input(shape))
        configs.append(layer.get_config())
    assert configs[0] == configs[1]
    assert type(CONFIG_LAYERS[name](kk.layers).from_config(configs[1])).__name__ == name


def test_weight_names_and_shapes_match_keras():
    """Keras 3's weight names: DepthwiseConv2D 'kernel' (kh, kw, in, m), SeparableConv2D
    depthwise_kernel / pointwise_kernel / bias, Conv2DTranspose (kh, kw, filters, in)."""
    def build(K):
        L = K.layers
        inputs = K.Input((6, 6, 4))
        x = L.DepthwiseConv2D(3, depth_multiplier=2)(inputs)
        x = L.SeparableConv2D(5, 3)(x)
        x = L.Conv2DTranspose(3, 2, strides=2)(x)
        return K.Model(inputs, L.Conv2D(4, 1, groups=1)(x))
    kiln_model, _, _ = build_pair(build)
    assert [(w.path, w.shape) for w in kiln_model.weights] == [
        ("depthwise_conv2d/kernel", (3, 3, 4, 2)), ("depthwise_conv2d/bias", (8,)),
        ("separable_conv2d/depthwise_kernel", (3, 3, 8, 1)),
        ("separable_conv2d/pointwise_kernel", (1, 1, 8, 5)), ("separable_conv2d/bias", (5,)),
        ("conv2d_transpose/kernel", (2, 2, 3, 5)), ("conv2d_transpose/bias", (3,)),
        ("conv2d/kernel", (1, 1, 3, 4)), ("conv2d/bias", (4,))]


# -- what Keras refuses -------------------------------------------------------------------------
BAD = [
    (lambda L: L.Conv2D(4, 3, strides=2, dilation_rate=2), "Conv2D", "dilation_rate"),
    (lambda L: L.Conv2D(5, 3, groups=2), "Conv2D", "groups"),
    (lambda L: L.Conv2D(4, 3, groups=0), "Conv2D", "groups"),
    (lambda L: L.Conv2D(4, (3, 0)), "Conv2D", "kernel_size"),
    (lambda L: L.DepthwiseConv2D(3, depth_multiplier=0), "DepthwiseConv2D",
     "depth_multiplier"),
    (lambda L: L.DepthwiseConv2D(3, padding="full"), "DepthwiseConv2D", "padding"),
    (lambda L: L.SeparableConv2D(0, 3), "SeparableConv2D", "filters"),
    (lambda L: L.SeparableConv2D(4, 3, strides=0), "SeparableConv2D", "strides"),
    (lambda L: L.Conv2DTranspose(4, 3, strides=2, output_padding=2), "Conv2DTranspose",
     "output_padding"),
    (lambda L: L.Conv2DTranspose(4, 3, strides=2, dilation_rate=2), "Conv2DTranspose",
     "dilation_rate"),
    (lambda L: L.Conv1D(4, (3, 3)), "Conv1D", "kernel_size"),
    (lambda L: L.Conv1D(4, 3, padding="causal2"), "Conv1D", "padding"),
]


@pytest.mark.parametrize("make,layer,argument", BAD)
def test_bad_arguments_are_refused_as_keras_does(make, layer, argument):
    keras = keras_oracle.real_keras()
    with pytest.raises(ValueError):
        make(keras.layers)
    with pytest.raises(ValueError, match=f"{layer} '.*'.*{argument}"):
        make(kk.layers)


@pytest.mark.parametrize("make,shape,layer", [
    (lambda L: L.Conv2D(4, 3, groups=2), (6, 6, 3), "Conv2D"),
    (lambda L: L.Conv1D(4, 3, groups=4), (6, 3), "Conv1D"),
])
def test_groups_must_divide_the_input_channels(make, shape, layer):
    keras = keras_oracle.real_keras()
    with pytest.raises(ValueError):
        make(keras.layers)(keras.Input(shape))
    with pytest.raises(ValueError, match=f"{layer} '.*'.*3 channels.*groups=\\d"):
        make(kk.layers)(kk.Input(shape))


def test_depthwise_is_planned_on_onednn_depthwise_kernels():
    """Not oneDNN's reference kernels: the forward and both backward passes of a
    DepthwiseConv2D in a training step (the process-wide cache is emptied first, so only
    this model's convolutions are looked at)."""
    from kiln.binding.primitive import primitive_cache
    primitive_cache.clear()
    inputs = kk.Input((12, 12, 16))
    x = kk.layers.DepthwiseConv2D(3, padding="same", name="dw")(inputs)
    x = kk.layers.DepthwiseConv2D(3, strides=2, padding="same", name="dw_s2")(x)
    model = kk.Model(inputs, kk.layers.Dense(2, activation="softmax")(kk.layers.Flatten()(x)))
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    x_data = np.random.default_rng(0).normal(size=(4, 12, 12, 16)).astype(np.float32)
    model.fit(x_data, np.eye(2, dtype=np.float32)[[0, 1, 0, 1]], epochs=1, verbose=0)
    conv_pds = [entry for key, entry in primitive_cache._entries.items()
                if isinstance(key, tuple) and str(key[0]).startswith("conv")]
    assert conv_pds
    for primitive in conv_pds:
        assert not primitive.pd.implementation.startswith("ref"), primitive.pd.implementation


def test_model_config_crosses_to_keras_and_back():
    """A functional model of the family: kiln's config builds the same model in Keras (same
    layers, weights, predictions) and Keras's config builds it back in kiln; the layer entries
    carry the build_configs Keras writes."""
    import json
    keras = keras_oracle.real_keras()

    def build(K):
        L = K.layers
        inputs = K.Input((6, 6, 3))
        x = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(inputs)
        x = L.SeparableConv2D(4, 3, dilation_rate=2, padding="same", activation="relu")(x)
        x = L.Conv2D(4, 3, groups=2)(x)
        x = L.Conv2DTranspose(2, 3, strides=2, output_padding=1)(x)
        return K.Model(inputs, L.Flatten()(x))

    ours, theirs_reference, x = build_pair(build)
    config = json.loads(json.dumps(ours.get_config()))
    assert [layer.get("build_config") for layer in config["layers"]] == [
        layer.get("build_config") for layer in json.loads(json.dumps(
            theirs_reference.get_config()))["layers"]]
    theirs = keras.Model.from_config(json.loads(json.dumps(config)))
    assert [w.shape for w in theirs.weights] == [w.shape for w in ours.weights]
    theirs.set_weights(ours.get_weights())
    expected = ours.predict(x, verbose=0)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    clone = kk.Model.from_config(json.loads(json.dumps(theirs.get_config())))
    clone.set_weights(ours.get_weights())
    np.testing.assert_allclose(clone.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-7)


CONV1D_GRADIENT_CASES = {
    "causal-dilated-relu": dict(filters=4, kernel_size=3, padding="causal", dilation_rate=2,
                                activation="relu"),
    "strided-grouped": dict(filters=6, kernel_size=2, strides=2, groups=3),
    "same-tanh": dict(filters=5, kernel_size=3, padding="same", activation="tanh"),
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("case", list(CONV1D_GRADIENT_CASES))
def test_conv1d_training_step_equals_keras(case, data_format):
    """kiln's Conv1DOp (the layer's own) against Keras's Conv1D differentiated by JAX, on
    the same weights: the output and the gradients of sum(output * dy) with respect to the
    input, the kernel and the bias, i.e. the same SGD step."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
    import jax
    import jax.numpy as jnp
    from op_checker import run_ops

    keras = keras_oracle.real_keras()
    arguments = dict(CONV1D_GRADIENT_CASES[case], data_format=data_format)
    shape = (9, 6) if data_format == CL else (6, 9)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, *shape)).astype(np.float32)
    theirs = keras.layers.Conv1D(**arguments)
    theirs.build((None, *shape))
    weights = [rng.normal(0, 0.4, size=w.shape).astype(np.float32) for w in theirs.weights]
    theirs.set_weights(weights)
    expected = np.asarray(theirs(x))
    dy = rng.normal(size=expected.shape).astype(np.float32)

    def objective(variables, inputs):
        outputs, _ = theirs.stateless_call(variables, [], inputs)
        return jnp.sum(outputs * dy)

    variables = [jnp.asarray(w) for w in weights]
    weight_grads, input_grad = jax.grad(objective, argnums=(0, 1))(variables, jnp.asarray(x))

    ours = kk.layers.Conv1D(**arguments, name="conv")
    ours(kk.Input(shape))
    params = {"conv/kernel": weights[0], "conv/bias": weights[1]}
    result, _ = run_ops(ours.op, x, params, dy, data_format)
    np.testing.assert_allclose(result.output, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result.input_grad, np.asarray(input_grad), rtol=1e-4, atol=1e-4)
    for name, grad in zip(("conv/kernel", "conv/bias"), weight_grads, strict=True):
        np.testing.assert_allclose(result.param_grads[name], np.asarray(grad), rtol=1e-4,
                                   atol=1e-4, err_msg=name)


def test_keras2_configs_are_read():
    """tf.keras 2 wrote Conv2D's `groups` into DepthwiseConv2D and Conv2DTranspose configs,
    and dtypes as plain names: both are read (groups only at its value, 1)."""
    common = {"trainable": True, "dtype": "float32", "kernel_size": [3, 3], "strides": [1, 1],
              "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1],
              "groups": 1, "activation": "relu", "use_bias": True,
              "bias_initializer": {"class_name": "Zeros", "config": {}},
              "bias_regularizer": None, "activity_regularizer": None, "bias_constraint": None}
    depthwise = kk.layers.DepthwiseConv2D.from_config({
        **common, "name": "dw", "depth_multiplier": 2,
        "depthwise_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
        "depthwise_regularizer": None, "depthwise_constraint": None})
    transpose = kk.layers.Conv2DTranspose.from_config({
        **common, "name": "up", "filters": 4, "output_padding": None,
        "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": None}},
        "kernel_regularizer": None, "kernel_constraint": None})
    y = transpose(depthwise(kk.Input((5, 5, 3))))
    assert tuple(y.shape) == (None, 5, 5, 4)
    with pytest.raises(ValueError, match="DepthwiseConv2D 'dw2'.*argument groups"):
        kk.layers.DepthwiseConv2D(3, groups=3, name="dw2")
