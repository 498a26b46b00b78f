"""The 1D (sequence) layers against real Keras 3 (JAX backend) through the shared checker
(keras_oracle.py): pooling, global pooling, up-sampling, padding, cropping, RepeatVector and
Permute / Reshape / Flatten of (batch, steps, channels) tensors, in both data formats:
predictions and training steps from the same weights (the gradient flows back through each
layer to a Conv1D before it), get_config equal to Keras's; arguments Keras refuses refused
with the layer and the argument named."""

import keras_oracle
import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"


def sequence(steps, channels, data_format):
    return (steps, channels) if data_format == CL else (channels, steps)


def head(L, x, data_format):
    """Flatten (a 3D output) and a softmax Dense of 3 classes."""
    if len(x.shape) == 3:
        x = L.Flatten(data_format=data_format)(x)
    return L.Dense(3, activation="softmax")(x)


# name -> the layer under test on L (keras.layers of either side), given the data format;
# it reads a relu Conv1D's (9 steps, 3 channels) output
LAYERS = {
    "max-pool": lambda L, f: L.MaxPooling1D(data_format=f),
    "max-pool-3-s1-same": lambda L, f: L.MaxPooling1D(3, strides=1, padding="same",
                                                      data_format=f),
    "avg-pool-3-s2-same": lambda L, f: L.AveragePooling1D(3, strides=2, padding="same",
                                                          data_format=f),
    "avg-pool-2-s3": lambda L, f: L.AveragePooling1D(pool_size=(2,), strides=3, data_format=f),
    "global-avg": lambda L, f: L.GlobalAveragePooling1D(data_format=f),
    "global-max": lambda L, f: L.GlobalMaxPooling1D(data_format=f),
    "global-avg-keepdims": lambda L, f: L.GlobalAveragePooling1D(data_format=f, keepdims=True),
    "global-max-keepdims": lambda L, f: L.GlobalMaxPooling1D(data_format=f, keepdims=True),
}


def layer_model(name, data_format):
    def build(K):
        L = K.layers
        inputs = K.Input(sequence(9, 2, data_format))
        x = L.Conv1D(3, 2, activation="relu", data_format=data_format)(inputs)
        x = LAYERS[name](L, data_format)(x)
        return K.Model(inputs, head(L, x, data_format))
    return build


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_keras(name, data_format):
    kiln_model, keras_model = check_against_keras(layer_model(name, data_format),
                                                  optimizers=["sgd"])
    ours, theirs = kiln_model.layers[2], keras_model.layers[2]
    assert ours.get_config() == theirs.get_config()
    assert tuple(ours.output.shape) == tuple(theirs.output.shape)
    assert type(ours).from_config(theirs.get_config()).get_config() == theirs.get_config()


def test_max_pooling_after_relu_conv_trains_like_keras_with_adam():
    """A text CNN's front: relu Conv1D -> MaxPooling1D (which applies relu's derivative to its
    pooled gradient) -> Conv1D -> GlobalMaxPooling1D, two Adam steps."""
    def build(K):
        L = K.layers
        inputs = K.Input((12, 4))
        x = L.Conv1D(5, 3, activation="relu")(inputs)
        x = L.MaxPooling1D(2)(x)
        x = L.Conv1D(4, 2, padding="same", activation="relu")(x)
        x = L.GlobalMaxPooling1D()(x)
        return K.Model(inputs, L.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=["adam"])


# -- what Keras refuses ---------------------------------------------------------------------------
BAD = [
    (lambda L: L.MaxPooling1D(0), "MaxPooling1D", "pool_size"),
    (lambda L: L.AveragePooling1D(2, strides=(1, 1)), "AveragePooling1D", "strides"),
    (lambda L: L.MaxPooling1D(2, padding="full"), "MaxPooling1D", "padding"),
    (lambda L: L.GlobalMaxPooling1D(data_format="nwc"), "GlobalMaxPooling1D", "data_format"),
]


@pytest.mark.parametrize("make,layer,argument", BAD)
def test_bad_arguments_are_refused_as_keras_does(make, layer, argument):
    keras = keras_oracle.real_keras()
    with pytest.raises((ValueError, TypeError)):  # when made, or (padding) when called
        make(keras.layers)(keras.Input((9, 2)))
    with pytest.raises(ValueError, match=f"{layer} '.*'.*argument {argument}"):
        make(kk.layers)


@pytest.mark.parametrize("make,shape,layer,what", [
    (lambda L: L.MaxPooling1D(4), (3, 2), "MaxPooling1D", "3 steps"),
    (lambda L: L.AveragePooling1D(2), (3, 2, 2), "AveragePooling1D", "3D input"),
])
def test_inputs_that_do_not_fit_are_refused(make, shape, layer, what):
    with pytest.raises(ValueError, match=f"{layer} '.*'.*{what}"):
        make(kk.layers)(kk.Input(shape))


@pytest.mark.parametrize("layer", ["GlobalAveragePooling1D", "GlobalMaxPooling1D"])
def test_global_pooling_names_itself_when_given_a_mask(layer):
    inputs, mask = kk.Input((9, 2)), kk.Input((9,))
    with pytest.raises(NotImplementedError, match=f"{layer} 'pool': a mask"):
        getattr(kk.layers, layer)(name="pool")(inputs, mask=mask)
