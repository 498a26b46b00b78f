"""TimeDistributed against real Keras 3 (JAX backend) through the shared checker
(keras_oracle.py): Dense on (batch, time, features), Conv1D on (batch, time, steps, channels),
Conv2D / MaxPooling2D / Flatten / Dense / BatchNormalization on (batch, time, H, W, C) videos in
both data formats (channels_first videos are (batch, time, C, H, W)), in Sequential and
functional models: predictions and training steps from the same weights, the structure (only
TimeDistributed in model.layers, the wrapped layer's weights as its own), get_config equal to
Keras's and read back; .keras and .h5 files both ways; the errors Keras gives."""

import json

import keras_oracle
import numpy as np
import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

CL, CF = "channels_last", "channels_first"
STEPS = 3


def video(height, width, channels, data_format):
    """The shape of a video without the batch: (time, H, W, C) or (time, C, H, W)."""
    if data_format == CL:
        return (STEPS, height, width, channels)
    return (STEPS, channels, height, width)


def classes(L, x):
    """Flatten whatever the TimeDistributed layers left and a softmax Dense of 3 classes."""
    return L.Dense(3, activation="softmax")(L.Flatten()(x))


def td_dense(L, f):
    return L.Input((STEPS, 5)), [L.TimeDistributed(L.Dense(4, activation="relu"))]


def td_dense_softmax(L, f):
    # the wrapped layer is two ops (the Dense and its softmax): both run on the folded batch
    return L.Input((STEPS, 5)), [L.TimeDistributed(L.Dense(4, activation="softmax"))]


def td_conv1d(L, f):
    # a 4D input (batch, time, steps, channels): each slice is a sequence
    shape = (STEPS, 6, 2) if f == CL else (STEPS, 2, 6)
    return L.Input(shape), [L.TimeDistributed(L.Conv1D(3, 2, activation="tanh",
                                                       data_format=f))]


def td_video_cnn(L, f):
    return L.Input(video(6, 5, 2, f)), [
        L.TimeDistributed(L.Conv2D(4, 3, activation="relu", padding="same", data_format=f)),
        L.TimeDistributed(L.MaxPooling2D(data_format=f)),
        L.TimeDistributed(L.Flatten(data_format=f)),
        L.TimeDistributed(L.Dense(5, activation="relu"))]


def td_video_frozen_batch_norm(L, f):
    axis = -1 if f == CL else 1
    return L.Input(video(4, 4, 2, f)), [
        L.TimeDistributed(L.Conv2D(3, 3, data_format=f)),
        L.TimeDistributed(L.BatchNormalization(axis=axis, trainable=False))]


MODELS = {"dense": td_dense, "dense-softmax": td_dense_softmax, "conv1d": td_conv1d,
          "video-cnn": td_video_cnn, "video-frozen-batch-norm": td_video_frozen_batch_norm}


def sequential(name, data_format):
    def build(K):
        inputs, layers = MODELS[name](K.layers, data_format)
        model = K.Sequential([inputs, *layers])
        model.add(K.layers.Flatten())
        model.add(K.layers.Dense(3, activation="softmax"))
        return model
    return build


def functional(name, data_format):
    def build(K):
        inputs, layers = MODELS[name](K.layers, data_format)
        x = inputs
        for layer in layers:
            x = layer(x)
        return K.Model(inputs, classes(K.layers, x))
    return build


def _json(value):
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("data_format", [CL, CF])
@pytest.mark.parametrize("name", list(MODELS))
def test_sequential_matches_keras(name, data_format):
    kiln_model, keras_model = check_against_keras(sequential(name, data_format),
                                                  optimizers=["sgd"])
    for ours, theirs in zip(kiln_model.layers, keras_model.layers, strict=True):
        if type(theirs).__name__ == "TimeDistributed":
            assert _json(ours.get_config()) == _json(theirs.get_config())
            copy = kk.layers.TimeDistributed.from_config(ours.get_config())
            assert type(copy.layer).__name__ == type(theirs.layer).__name__
            assert _json(copy.get_config()["layer"]["config"]) == _json(
                theirs.get_config()["layer"]["config"])


@pytest.mark.parametrize("name", ["dense", "video-cnn"])
def test_functional_matches_keras_with_adam(name):
    check_against_keras(functional(name, CL), optimizers=["adam"])


def test_dense_weights_are_the_wrappers():
    model = kk.Sequential([kk.Input((STEPS, 5)), kk.layers.TimeDistributed(kk.layers.Dense(2))])
    x = np.random.default_rng(0).standard_normal((4, STEPS, 5)).astype(np.float32)
    predicted = model.predict(x, verbose=0)
    wrapper = model.layers[0]
    assert [w.name for w in wrapper.weights] == ["kernel", "bias"]
    kernel, bias = wrapper.get_weights()
    np.testing.assert_allclose(predicted, x @ kernel + bias, rtol=1e-5, atol=1e-6)


def batch_norm(axis):
    return lambda L: L.BatchNormalization(
        axis=axis, momentum=0.5, beta_initializer="random_normal",
        gamma_initializer="random_uniform", moving_mean_initializer="random_normal")


@pytest.mark.parametrize("shape, axis", [((STEPS, 5), -1), (video(4, 3, 2, CL), -1),
                                         (video(4, 3, 2, CF), 1)])
def test_batch_norm_trains_every_time_step_with_its_own_statistics_as_keras(shape, axis):
    def build(K):
        inputs = K.Input(shape)
        x = K.layers.TimeDistributed(batch_norm(axis)(K.layers))(inputs)
        return K.Model(inputs, classes(K.layers, x))

    # the moving statistics take one update per time step: compared after every epoch
    check_against_keras(build, optimizers=["sgd", "adam"])


def test_dropout_predicts_like_keras_and_trains():
    def build(K):
        inputs = K.Input((STEPS, 6))
        x = K.layers.TimeDistributed(K.layers.Dense(8, activation="relu"))(inputs)
        x = K.layers.TimeDistributed(K.layers.Dropout(0.5))(x)
        return K.Model(inputs, classes(K.layers, x))

    kiln_model, _ = check_against_keras(build, train=False)
    kiln_model.compile(optimizer="adam", loss="categorical_crossentropy")
    x = np.random.default_rng(0).standard_normal((8, STEPS, 6)).astype(np.float32)
    history = kiln_model.fit(x, np.eye(3, dtype=np.float32)[np.arange(8) % 3], epochs=2,
                             verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


@pytest.mark.parametrize("argument", [3, "dense", None])
def test_a_non_layer_is_refused_as_keras(argument):
    with pytest.raises(ValueError, match="Please initialize `TimeDistributed` layer with a "
                                         r"`keras.layers.Layer` instance. Received: "):
        kk.layers.TimeDistributed(argument)


def test_an_input_below_three_dimensions_is_refused_as_keras():
    with pytest.raises(ValueError, match=r"TimeDistributed 'time_distributed[_0-9]*'.*should "
                                         r"be passed an `input_shape` with at least 3 "
                                         r"dimensions, received: \(None, 4\)"):
        kk.layers.TimeDistributed(kk.layers.Dense(2))(kk.Input((4,)))


def test_compute_mask_passes_the_mask_on():
    layer = kk.layers.TimeDistributed(kk.layers.Dense(2))
    mask = object()
    assert layer.compute_mask(None, mask) is mask
    assert layer.compute_mask(None) is None


@pytest.mark.parametrize("data_format", [CL, CF])
def test_keras_and_h5_files_both_ways(tmp_path, data_format):
    keras = keras_oracle.real_keras()
    kiln_model, keras_model = check_against_keras(sequential("video-cnn", data_format),
                                                  train=False)
    x = keras_oracle.random_inputs(video(6, 5, 2, data_format), count=4, seed=3)
    expected = keras_model.predict(x, verbose=0)
    kiln_model.save(tmp_path / "kiln.keras")
    theirs = keras.models.load_model(tmp_path / "kiln.keras", safe_mode=True)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    keras_model.save(tmp_path / "keras.keras")
    for ours in (kk.models.load_model(tmp_path / "keras.keras"),
                 kk.models.load_model(tmp_path / "kiln.keras")):
        assert [type(layer).__name__ for layer in ours.layers] == [
            type(layer).__name__ for layer in keras_model.layers]
        np.testing.assert_allclose(ours.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    kiln_model.save(tmp_path / "kiln.h5")
    keras_model.save(tmp_path / "keras.h5")
    for path in ("kiln.h5", "keras.h5"):
        ours = kk.models.load_model(tmp_path / path)
        np.testing.assert_allclose(ours.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5,
                                   err_msg=path)
    theirs = keras.models.load_model(tmp_path / "kiln.h5")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)


def _fit_both_with_mse(build, x, y):
    """Predict and two epochs of SGD on mean squared error of the (batch, time, ...) output,
    in batches that leave a remainder, from the same weights: kiln equals Keras."""
    keras = keras_oracle.real_keras()
    kiln_model, keras_model, _ = keras_oracle.build_pair(build)
    np.testing.assert_allclose(kiln_model.predict(x, batch_size=2, verbose=0),
                               keras_model.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    losses = []
    for model, K in ((kiln_model, kk), (keras_model, keras)):
        model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1), loss="mse")
        # batches of 2: the plan reads each new batch, and a last batch of 1 plans again
        losses.append(model.fit(x, y, batch_size=2, epochs=2, shuffle=False,
                                verbose=0).history["loss"])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    keras_oracle.assert_weights_close(kiln_model, keras_model, "after two mse epochs")


def test_wrapped_sequential_model_trains_a_sequence_output_like_keras():
    def build(K):
        inner = K.Sequential([K.Input((6, 6, 2)), K.layers.Conv2D(3, 3, activation="relu"),
                              K.layers.Flatten()], name="frame")
        inputs = K.Input((STEPS, 6, 6, 2))
        x = K.layers.TimeDistributed(inner)(inputs)
        # named: Keras counts the Sequential's own functional graph in the automatic name
        return K.Model(inputs, K.layers.TimeDistributed(K.layers.Dense(2))(x), name="video")

    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, STEPS, 6, 6, 2)).astype(np.float32)
    _fit_both_with_mse(build, x, rng.standard_normal((5, STEPS, 2)).astype(np.float32))


@pytest.mark.parametrize("data_format", [CL, CF])
def test_video_output_trains_like_keras(data_format):
    def build(K):
        inputs = K.Input(video(5, 4, 2, data_format))
        return K.Model(inputs, K.layers.TimeDistributed(
            K.layers.Conv2D(3, 3, padding="same", data_format=data_format))(inputs))

    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, *video(5, 4, 2, data_format))).astype(np.float32)
    y = rng.standard_normal((3, *video(5, 4, 3, data_format))).astype(np.float32)
    _fit_both_with_mse(build, x, y)
