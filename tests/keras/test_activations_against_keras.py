"""Every Keras activation, by name (Activation, Dense / Conv2D `activation=`) and as a layer
(ReLU, LeakyReLU, ELU, PReLU, Softmax), against real Keras 3 (JAX backend) through the shared
checker: same weights, same predictions, same losses and weights after training steps, in both
data formats; and the keras.activations functions with their arguments (relu's max_value,
negative_slope and threshold, gelu's approximate) called on symbolic tensors inside a model."""

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
    # one step where relu has a threshold (see the functions on symbolic tensors below)
    steps = 1 if layer in ("relu-threshold", "relu-all") else 2
    kiln_model, keras_model = check_against_keras(conv_model(None, data_format, LAYERS[layer]),
                                                  optimizers=["sgd"], steps=steps)
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
    from kiln.graph.rewrite import fuse
    from kiln.graph.rules import RULES
    from kiln.ops import ActivationOp

    kk.backend.clear_session()
    model = conv_model("gelu", CL)(kk)
    training_ops = fuse(model.graph, RULES, "training").ops
    inference_ops = fuse(model.graph, RULES, "inference").ops
    def activations(ops):  # the Dense head's softmax stays an op of its own
        return [op.activation for op in ops if isinstance(op, ActivationOp)]

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


# -- keras.activations functions on symbolic tensors -------------------------------------------
class _GeluTanh:
    """A custom layer whose call() uses keras.activations (built on either API)."""

    def __new__(cls, K):
        class GeluTanh(K.layers.Layer):
            def call(self, inputs):
                return K.activations.gelu(inputs, approximate=True)

        return GeluTanh()


TRACED = {
    # Keras 3 traces these onto its ops; kiln onto the engine's eltwise op with the arguments
    "lambda-relu6": lambda K: K.layers.Lambda(lambda x: K.activations.relu(x, max_value=6)),
    "lambda-relu-max": lambda K: K.layers.Lambda(
        lambda x: K.activations.relu(x, max_value=0.5)),
    "lambda-relu-slope": lambda K: K.layers.Lambda(
        lambda x: K.activations.relu(x, negative_slope=0.1)),
    "lambda-relu-threshold": lambda K: K.layers.Lambda(
        lambda x: K.activations.relu(x, threshold=0.2, negative_slope=0.3, max_value=0.9)),
    "lambda-gelu-tanh": lambda K: K.layers.Lambda(
        lambda x: K.activations.gelu(x, approximate=True)),
    "lambda-gelu-erf": lambda K: K.layers.Lambda(lambda x: K.activations.gelu(x)),
    "lambda-elu-leaky": lambda K: K.layers.Lambda(lambda x: K.activations.leaky_relu(
        K.activations.elu(x, alpha=0.5), negative_slope=0.1)),
    "activation-function": lambda K: K.layers.Activation(
        lambda x: K.activations.relu(x, max_value=0.5, negative_slope=0.1)),
    "custom-layer-gelu-tanh": _GeluTanh,
}


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("layer", list(TRACED))
def test_activation_functions_on_symbolic_tensors_match_keras(layer, data_format):
    """keras.activations.relu / gelu / elu / leaky_relu with their arguments called on a
    symbolic tensor (a Lambda, an Activation given a function, a custom layer's call): the
    same predictions and SGD step as Keras."""
    if data_format == CF and layer not in ("lambda-relu-threshold", "lambda-gelu-tanh",
                                           "activation-function"):
        pytest.skip("element-wise: channels_first for a few is enough")
    # relu with a threshold jumps from 0 to the threshold there: after a first step, a value
    # within rounding distance of it may land on either side, and the second loss differ by
    # a whole jump (seen at 2e-4), so that one compares the first step only
    steps = 1 if "threshold" in layer else 2
    check_against_keras(conv_model(None, data_format, TRACED[layer]), optimizers=["sgd"],
                        steps=steps)


def test_activation_function_arguments_are_checked_in_a_model():
    inputs = kk.Input((4,))
    with pytest.raises(ValueError, match=r"Lambda 'bad'.*relu: argument max_value must be a "
                                         r"float >= 0"):
        kk.layers.Lambda(lambda x: kk.activations.relu(x, max_value=-1), name="bad")(inputs)
    with pytest.raises(ValueError, match=r"Activation 'named'.*argument activation"):
        kk.layers.Activation("relu7", name="named")


def test_gelu_approximations_compute_keras_values():
    keras = real_keras()
    x = np.linspace(-5, 5, 41).astype(np.float32)
    for approximate in (True, False):
        np.testing.assert_allclose(kk.activations.gelu(x, approximate=approximate),
                                   np.asarray(keras.activations.gelu(x, approximate=approximate)),
                                   rtol=1e-5, atol=1e-6, err_msg=f"approximate={approximate}")


def user_activations(K):
    """A user's activation written with keras.ops, one named like a Keras activation but
    computing something else (it must not be taken for Keras's relu), and a lambda."""
    def soft_gate(x):
        return x * K.ops.sigmoid(1.5 * x) + 0.1

    def relu(x):
        return K.ops.tanh(x) * 0.5

    return soft_gate, relu, lambda x: K.ops.square(x) * 0.25


@pytest.mark.parametrize("data_format", [CL, CF])
def test_user_activation_functions_in_layers_train_as_keras(data_format):
    shape = (6, 6, 2) if data_format == CL else (2, 6, 6)

    def build(K):
        soft_gate, fake_relu, square = user_activations(K)
        inputs = K.Input(shape)
        x = K.layers.Conv2D(4, 3, activation=soft_gate, data_format=data_format)(inputs)
        x = K.layers.DepthwiseConv2D(3, activation=fake_relu, data_format=data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        x = K.layers.Dense(5, activation=square)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=("sgd", "adam"), steps=2)


def test_user_activation_functions_are_configured_saved_and_loaded_as_keras(tmp_path):
    keras = real_keras()
    functions = {}
    for K in (kk, keras):
        soft_gate, _, _ = user_activations(K)

        @K.saving.register_keras_serializable(package="activation_tests")
        def gate(x, K=K):
            return x * K.ops.sigmoid(x)

        functions[K] = (soft_gate, gate)
    configs = [
        [K.layers.Dense(2, activation=functions[K][0]).get_config()["activation"],
         K.layers.Conv2D(2, 3, activation=functions[K][1]).get_config()["activation"],
         K.layers.Activation(functions[K][1]).get_config()["activation"]]
        for K in (kk, keras)]
    assert configs[0] == configs[1]
    # a registered function saves and loads (kiln's file read by Keras and by kiln)
    model = kk.Sequential([kk.Input((4,)), kk.layers.Dense(3, activation=functions[kk][1]),
                           kk.layers.Activation(functions[kk][1]), kk.layers.Dense(2)])
    model.save(tmp_path / "gate.keras")
    x = np.random.default_rng(0).random((3, 4), np.float32)
    expected = model.predict(x, verbose=0)
    theirs = keras.models.load_model(tmp_path / "gate.keras")
    np.testing.assert_allclose(np.asarray(theirs(x)), expected, rtol=1e-5, atol=1e-6)
    again = kk.models.load_model(tmp_path / "gate.keras")
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    # an unregistered one loads through custom_objects, as in Keras
    plain = kk.Sequential([kk.Input((4,)), kk.layers.Dense(2, activation=functions[kk][0])])
    plain.save(tmp_path / "plain.keras")
    loaded = kk.models.load_model(tmp_path / "plain.keras",
                                  custom_objects={"soft_gate": functions[kk][0]})
    np.testing.assert_allclose(loaded.predict(x, verbose=0), plain.predict(x, verbose=0),
                               rtol=1e-6)
    with pytest.raises(ValueError, match="soft_gate"):
        kk.models.load_model(tmp_path / "plain.keras")
