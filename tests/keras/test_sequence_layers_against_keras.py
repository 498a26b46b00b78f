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
# it reads a relu Conv1D's (8 steps, 3 channels) output
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
    # no data_format in Keras: axis 1 is the steps (the channels in channels_first)
    "up-sampling": lambda L, f: L.UpSampling1D(),
    "up-sampling-3": lambda L, f: L.UpSampling1D(size=3),
    "cropping": lambda L, f: L.Cropping1D(),
    "cropping-2-0": lambda L, f: L.Cropping1D((2, 0)),
    "zero-padding": lambda L, f: L.ZeroPadding1D(data_format=f),
    "zero-padding-0-2": lambda L, f: L.ZeroPadding1D((0, 2), data_format=f),
    "spatial-dropout-rate-0": lambda L, f: L.SpatialDropout1D(0.0),
    # the shape layers on sequences (Permute and Reshape count axes in the Keras shape)
    "permute": lambda L, f: L.Permute((2, 1)),
    "reshape-3d": lambda L, f: L.Reshape((4, 6)),
    "reshape-2d": lambda L, f: L.Reshape((-1,)),
    "flatten": lambda L, f: L.Flatten(data_format=f),
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


def test_layers_reading_the_model_input_follow_each_new_batch():
    """A 1D layer on the model input reads it through a view: predictions and training steps
    on new data (the plan's input buffer then takes each batch by copy) still match Keras."""
    import numpy as np

    def build(K):
        L = K.layers
        inputs = K.Input((8, 3))
        x = L.MaxPooling1D(2, strides=1)(inputs)
        y = L.UpSampling1D(2)(inputs)
        x = L.concatenate([L.Flatten()(x), L.Flatten()(L.Cropping1D((3, 4))(y))])
        return K.Model(inputs, L.Dense(3, activation="softmax")(x))

    kiln_model, keras_model = check_against_keras(build, optimizers=["sgd"])
    rng = np.random.default_rng(5)
    for count in (6, 6, 4):
        data = rng.normal(size=(count, 8, 3)).astype(np.float32)
        np.testing.assert_allclose(kiln_model.predict(data, verbose=0),
                                   keras_model.predict(data, verbose=0), rtol=1e-4, atol=1e-5)


def test_repeat_vector_between_dense_and_conv1d_trains_like_keras():
    """An encoder's vector repeated at every step of a decoder: Dense -> RepeatVector ->
    Conv1D, and RepeatVector of a Flatten of a sequence (a real (batch, features) matrix)."""
    def build(K):
        L = K.layers
        inputs = K.Input((6, 2))
        x = L.Conv1D(3, 2, activation="tanh")(inputs)                 # (5, 3)
        vector = L.Dense(4, activation="relu")(L.Flatten()(x))
        x = L.RepeatVector(3)(vector)                                  # (3, 4)
        x = L.Conv1D(2, 2, activation="tanh")(x)                       # (2, 2)
        x = L.RepeatVector(2)(L.Flatten()(x))                          # (2, 4)
        return K.Model(inputs, head(L, x, CL))

    kiln_model, keras_model = check_against_keras(build, optimizers=["sgd", "adam"])
    for ours, theirs in zip(kiln_model.layers, keras_model.layers, strict=True):
        assert tuple(ours.output.shape) == tuple(theirs.output.shape)
        if type(ours).__name__ == "RepeatVector":
            assert ours.get_config() == theirs.get_config()


@pytest.mark.parametrize("data_format", [CL, CF])
def test_repeat_vector_of_a_flattened_image_trains_like_keras(data_format):
    """Flatten of an image is a free view of its 4D bytes in kiln: RepeatVector first makes
    the (batch, features) matrix in Keras's (h, w, c) order."""
    def build(K):
        L = K.layers
        inputs = K.Input((3, 3, 2) if data_format == CL else (2, 3, 3))
        x = L.Conv2D(3, 2, activation="relu", data_format=data_format)(inputs)  # 2x2x3
        x = L.RepeatVector(3)(L.Flatten(data_format=data_format)(x))          # (3, 12)
        x = L.Conv1D(2, 2)(x)
        return K.Model(inputs, head(L, x, CL))

    check_against_keras(build, optimizers=["sgd"])


@pytest.mark.parametrize("data_format", [CL, CF])
def test_spatial_dropout_predicts_like_keras(data_format):
    """Random while training (its statistics: tests/ops/test_ops_sequence_as_image.py), the
    identity in predict."""
    def build(K):
        L = K.layers
        inputs = K.Input(sequence(9, 2, data_format))
        x = L.Conv1D(3, 2, activation="relu", data_format=data_format)(inputs)
        x = L.SpatialDropout1D(0.4, seed=2)(x)
        return K.Model(inputs, head(L, x, data_format))

    kiln_model, keras_model = check_against_keras(build, train=False)
    assert kiln_model.layers[2].get_config() == keras_model.layers[2].get_config()


def test_keras2_configs_are_read():
    """tf.keras 2 wrote Dropout's noise_shape and trainable into SpatialDropout1D's config,
    and the pooling sizes as lists."""
    dropout = kk.layers.SpatialDropout1D.from_config(
        {"name": "drop", "trainable": True, "dtype": "float32", "rate": 0.2,
         "noise_shape": None, "seed": None})
    pooling = kk.layers.MaxPooling1D.from_config(
        {"name": "pool", "trainable": True, "dtype": "float32", "strides": [2],
         "pool_size": [2], "padding": "valid", "data_format": "channels_last"})
    assert tuple(pooling(dropout(kk.Input((8, 3)))).shape) == (None, 4, 3)
    with pytest.raises(ValueError, match="SpatialDropout1D 'd'.*argument noise_shape"):
        kk.layers.SpatialDropout1D(0.2, noise_shape=(None, 1, 3), name="d")


def test_spatial_dropout_trains_the_layers_around_it():
    """A fit through SpatialDropout1D: the loss falls (the dropout's randomness differs from
    Keras's, so the steps are not compared)."""
    import numpy as np
    L = kk.layers
    inputs = kk.Input((10, 3))
    x = L.Conv1D(8, 3, activation="relu")(inputs)
    x = L.SpatialDropout1D(0.3, seed=1)(x)
    model = kk.Model(inputs, L.Dense(2, activation="softmax")(L.GlobalAveragePooling1D()(x)))
    model.compile(optimizer=kk.optimizers.Adam(0.01), loss="categorical_crossentropy")
    rng = np.random.default_rng(0)
    x_data = rng.normal(size=(64, 10, 3)).astype(np.float32)
    y_data = np.eye(2, dtype=np.float32)[(x_data[:, :, 0].mean(axis=1) > 0).astype(int)]
    losses = model.fit(x_data, y_data, epochs=15, batch_size=16, verbose=0).history["loss"]
    assert losses[-1] < 0.7 * losses[0]


# -- what Keras refuses ---------------------------------------------------------------------------
BAD = [
    (lambda L: L.MaxPooling1D(0), "MaxPooling1D", "pool_size"),
    (lambda L: L.AveragePooling1D(2, strides=(1, 1)), "AveragePooling1D", "strides"),
    (lambda L: L.MaxPooling1D(2, padding="full"), "MaxPooling1D", "padding"),
    (lambda L: L.GlobalMaxPooling1D(data_format="nwc"), "GlobalMaxPooling1D", "data_format"),
    (lambda L: L.UpSampling1D(0), "UpSampling1D", "size"),
    (lambda L: L.UpSampling1D(1.5), "UpSampling1D", "size"),
    (lambda L: L.ZeroPadding1D(-1), "ZeroPadding1D", "padding"),
    (lambda L: L.ZeroPadding1D((1, 2, 3)), "ZeroPadding1D", "padding"),
    (lambda L: L.Cropping1D((1, -1)), "Cropping1D", "cropping"),
    (lambda L: L.SpatialDropout1D(1.5), "SpatialDropout1D", "rate"),
    (lambda L: L.RepeatVector(0), "RepeatVector", "n"),
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
    (lambda L: L.Cropping1D((2, 1)), (3, 2), "Cropping1D", "3 steps"),
    (lambda L: L.RepeatVector(2), (3, 2), "RepeatVector", "2D input"),
    (lambda L: L.UpSampling1D(2), (3,), "UpSampling1D", "3D input"),
])
def test_inputs_that_do_not_fit_are_refused(make, shape, layer, what):
    with pytest.raises(ValueError, match=f"{layer} '.*'.*{what}"):
        make(kk.layers)(kk.Input(shape))


def test_global_average_pooling_with_keepdims_names_itself_when_given_a_mask():
    """Keras averages over the unmasked steps (tested against Keras in
    layers/test_masks_against_keras.py); with keepdims not yet, refused by name (Keras's
    GlobalMaxPooling1D takes no mask at all: its call has no such argument, as in Keras)."""
    import inspect

    inputs, mask = kk.Input((9, 2)), kk.Input((9,))
    with pytest.raises(NotImplementedError, match="GlobalAveragePooling1D 'pool': keepdims"):
        kk.layers.GlobalAveragePooling1D(name="pool", keepdims=True)(inputs, mask=mask)
    keras = keras_oracle.real_keras()
    for name in ("GlobalAveragePooling1D", "GlobalMaxPooling1D"):
        ours = inspect.signature(getattr(kk.layers, name).call).parameters
        theirs = inspect.signature(getattr(keras.layers, name).call).parameters
        assert ("mask" in ours) == ("mask" in theirs), name


def test_a_model_of_the_sequence_layers_saves_and_loads_in_kiln_and_keras(tmp_path):
    """Every 1D layer in one model: kiln's config carries the build_configs Keras writes, a
    kiln .keras file rebuilds the same model in kiln and in real Keras (same predictions), and
    Keras's own file loads in kiln."""
    import json

    import numpy as np
    from keras_oracle import build_pair

    keras = keras_oracle.real_keras()

    def build(K):
        L = K.layers
        inputs = K.Input((8, 4))
        x = L.DepthwiseConv1D(3, padding="same")(inputs)
        x = L.SeparableConv1D(4, 3, padding="same", activation="relu")(x)
        x = L.Conv1DTranspose(4, 2, strides=2)(x)                      # 16 steps
        x = L.MaxPooling1D()(x)
        x = L.AveragePooling1D(2, padding="same")(x)
        x = L.UpSampling1D()(x)
        x = L.ZeroPadding1D((1, 2))(x)
        x = L.Cropping1D((2, 1))(x)
        x = L.SpatialDropout1D(0.1)(x)
        peak = L.GlobalMaxPooling1D(keepdims=True)(x)
        x = L.GlobalAveragePooling1D()(x)
        x = L.RepeatVector(1)(x)
        return K.Model(inputs, L.Flatten()(L.concatenate([x, peak], axis=1)))

    ours, theirs, x = build_pair(build)
    assert [layer.get("build_config") for layer in ours.get_config()["layers"]] == [
        layer.get("build_config") for layer in json.loads(json.dumps(
            theirs.get_config()))["layers"]]
    expected = ours.predict(x, verbose=0)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    path = str(tmp_path / "ours.keras")
    ours.save(path)
    np.testing.assert_allclose(kk.models.load_model(path).predict(x, verbose=0), expected,
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(keras.models.load_model(path).predict(x, verbose=0), expected,
                               rtol=1e-4, atol=1e-5)
    theirs_path = str(tmp_path / "theirs.keras")
    theirs.save(theirs_path)
    np.testing.assert_allclose(kk.models.load_model(theirs_path).predict(x, verbose=0),
                               expected, rtol=1e-4, atol=1e-5)
