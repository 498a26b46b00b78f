"""Every Keras activation, by name (Activation, Dense / Conv2D `activation=`) and as a layer
(ReLU, LeakyReLU, ELU, PReLU, Softmax), against real Keras 3 (JAX backend) through the shared
checker: same weights, same predictions, same losses and weights after training steps, in both
data formats."""

import numpy as np
import pytest
from keras_oracle import check_against_keras, real_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"
NAMES = ["relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish", "hard_sigmoid",
         "hard_silu", "hard_swish", "softplus", "softsign", "exponential", "mish", "tanh",
         "sigmoid", "linear"]


def conv_model(activation, data_format, layer=None):
    """Conv2D(activation) [+ an activation layer] + Flatten + Dense softmax."""
    shape = (5, 5, 2) if data_format == CL else (2, 5, 5)

    def build(K):
        inputs = K.Input(shape)
        x = K.layers.Conv2D(3, 3, activation=activation, data_format=data_format)(inputs)
        if layer is not None:
            x = layer(K)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


@pytest.mark.parametrize("name", NAMES)
def test_activation_by_name_in_conv_matches_keras(name):
    check_against_keras(conv_model(name, CL), optimizers=["sgd"])


@pytest.mark.parametrize("name", ["gelu", "selu", "softsign", "relu6"])
def test_activation_by_name_channels_first(name):
    check_against_keras(conv_model(name, CF), optimizers=["sgd"])


LAYERS = {
    "relu-max": lambda K: K.layers.ReLU(max_value=1.0),
    "relu-slope": lambda K: K.layers.ReLU(negative_slope=0.1),
    "relu-threshold": lambda K: K.layers.ReLU(threshold=0.2),
    "relu-all": lambda K: K.layers.ReLU(max_value=0.8, negative_slope=0.2, threshold=0.1),
    "leaky": lambda K: K.layers.LeakyReLU(),
    "leaky-0.05": lambda K: K.layers.LeakyReLU(negative_slope=0.05),
    "elu": lambda K: K.layers.ELU(alpha=0.7),
    "prelu": lambda K: K.layers.PReLU(alpha_initializer="ones"),
    "prelu-shared": lambda K: K.layers.PReLU(alpha_initializer="ones", shared_axes=[1, 2]),
    "activation-gelu": lambda K: K.layers.Activation("gelu"),
    "softmax-axis1": lambda K: K.layers.Softmax(axis=1),
    "softmax-last": lambda K: K.layers.Softmax(),
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("layer", list(LAYERS))
def test_activation_layer_matches_keras(layer, data_format):
    kiln_model, keras_model = check_against_keras(conv_model(None, data_format, LAYERS[layer]),
                                                  optimizers=["sgd"])
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


def test_prelu_weights_are_trained_like_keras():
    def build(K):
        inputs = K.Input((6,))
        x = K.layers.Dense(5)(inputs)
        x = K.layers.PReLU(alpha_initializer="ones")(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    kiln_model, _ = check_against_keras(build, optimizers=["sgd", "adam"])
    assert [w.path for w in kiln_model.layers[2].weights] == ["p_re_lu/alpha"]


def test_default_layer_names_match_keras():
    keras = real_keras()
    for K in (kk, keras):
        K.backend.clear_session()
    names = [[type(layer).__name__, layer.name] for layer in (
        kk.layers.ReLU(), kk.layers.LeakyReLU(), kk.layers.PReLU(), kk.layers.ELU(),
        kk.layers.Softmax())]
    expected = [[type(layer).__name__, layer.name] for layer in (
        keras.layers.ReLU(), keras.layers.LeakyReLU(), keras.layers.PReLU(), keras.layers.ELU(),
        keras.layers.Softmax())]
    assert names == expected


@pytest.mark.parametrize("build, message", [
    (lambda: kk.layers.ReLU(max_value=-1), "argument max_value must be a float >= 0"),
    (lambda: kk.layers.ReLU(negative_slope=-0.1), "argument negative_slope"),
    (lambda: kk.layers.ReLU(threshold=None), "argument threshold"),
    (lambda: kk.layers.LeakyReLU(negative_slope=-1), "argument negative_slope"),
    (lambda: kk.layers.PReLU(shared_axes=[0]), "argument shared_axes"),
    (lambda: kk.layers.Softmax(axis=[1, 2]), "several axes are not supported"),
    (lambda: kk.layers.Activation("sparsemax"), "argument activation must be one of"),
])
def test_bad_arguments_name_the_layer_and_argument(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_activation_functions_compute_keras_values():
    keras = real_keras()
    x = np.linspace(-5, 5, 41).astype(np.float32)
    for name in NAMES:
        ours = getattr(kk.activations, name)(x)
        theirs = np.asarray(getattr(keras.activations, name)(x))
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, err_msg=name)


def test_activations_without_an_output_backward_fuse_in_inference_only():
    """gelu's derivative needs its input, which a fused conv does not keep: training plans run
    it as its own op, inference plans as a post-op of the convolution."""
    from kiln.graph.fusion import INFERENCE_RULES, RULES, fuse
    from kiln.ops import Activation

    kk.backend.clear_session()
    model = conv_model("gelu", CL)(kk)
    training_ops = fuse(model.graph, RULES).ops
    inference_ops = fuse(model.graph, RULES + INFERENCE_RULES).ops
    def activations(ops):  # the Dense head's softmax stays an op of its own
        return [op.activation for op in ops if isinstance(op, Activation)]

    assert activations(training_ops) == ["gelu", "softmax"]
    assert activations(inference_ops) == ["softmax"]
    x = np.random.default_rng(0).normal(size=(4, 5, 5, 2)).astype(np.float32)
    conv = model.layers[1]
    kernel, bias = conv.get_weights()
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2))
    z = np.einsum("nijcab,abco->nijo", windows, kernel) + bias
    features = kk.Model(model.inputs, conv.output).predict(x, verbose=0)
    np.testing.assert_allclose(features, kk.activations.gelu(z), rtol=1e-5, atol=1e-5)


def test_keras2_alpha_of_leaky_relu_is_its_negative_slope():
    with pytest.warns(UserWarning, match="alpha"):
        layer = kk.layers.LeakyReLU(alpha=0.1)
    assert layer.get_config()["negative_slope"] == 0.1
