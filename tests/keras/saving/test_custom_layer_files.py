"""Model files holding custom layers (`keras.layers.Layer` subclasses written with `add_weight`
and `keras.ops`) against real Keras 3 (JAX backend), both ways and in both formats: the same
classes written once for both APIs, registered with `register_keras_serializable` or passed
in `custom_objects`; Keras's weights layout for their variables (trainable ones, then the
others, each in creation order; layers a layer owns under their attribute); a registered
metric function in the compile state; training resumed from a Keras file equal to training in
one go; unknown classes and Lambda layers refused in safe mode with the layer's name."""

import io
import json
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import h5py  # noqa: E402
import keras_oracle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:`build\\(\\)` was called on layer:UserWarning"),
]
RTOL, ATOL = keras_oracle.RTOL, keras_oracle.ATOL
PACKAGE = "custom_layer_files"


def custom_classes(K, register=True):
    """ScaleShift: a trainable scale and a non-trainable shift (created first, saved second);
    Block: owns a Dense and, in a list, a ScaleShift and another Dense."""

    class ScaleShift(K.layers.Layer):
        def __init__(self, gain=1.0, **kwargs):
            super().__init__(**kwargs)
            self.gain = gain

        def build(self, input_shape):
            self.shift = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                         trainable=False, name="shift")
            self.scale = self.add_weight(shape=(input_shape[-1],),
                                         initializer="random_normal", name="scale")

        def call(self, x):
            return K.ops.relu(x * self.scale + self.shift) * self.gain

        def get_config(self):
            return {**super().get_config(), "gain": self.gain}

    class Block(K.layers.Layer):
        def __init__(self, units=3, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.dense = K.layers.Dense(units, activation="tanh")
            self.parts = [ScaleShift(0.5), K.layers.Dense(units)]

        def call(self, x):
            h = self.dense(x)
            return self.parts[1](self.parts[0](h)) + h

        def get_config(self):
            return {**super().get_config(), "units": self.units}

    if register:
        ScaleShift = K.saving.register_keras_serializable(PACKAGE)(ScaleShift)  # noqa: N806
        Block = K.saving.register_keras_serializable(PACKAGE)(Block)  # noqa: N806
    return ScaleShift, Block


def build(K, classes):
    scale_shift, block = classes
    inputs = K.Input((4,))
    x = scale_shift(2.0, name="scaled")(K.layers.Dense(5, name="first")(inputs))
    x = block(3, name="block")(x)
    return K.Model(inputs, K.layers.Dense(2, name="last")(x))


def peak_metric(K, np_side):
    def peak(y_true, y_pred):
        return np.max(y_pred, axis=-1) if np_side else K.ops.max(y_pred, axis=-1)

    return K.saving.register_keras_serializable(PACKAGE, name="peak")(peak)


def data(count=12):
    random = np.random.default_rng(0)
    return random.random((count, 4), np.float32), random.random((count, 2), np.float32)


def compile_and_fit(model, K, metric, epochs=1):
    model.compile(optimizer=K.optimizers.Adam(0.01), loss="mean_squared_error",
                  metrics=[metric])
    x, y = data()
    model.fit(x, y, batch_size=6, epochs=epochs, shuffle=False, verbose=0)


def fit_more(model, epochs=1):
    model.fit(*data(), batch_size=6, epochs=epochs, shuffle=False, verbose=0)


# After more Adam steps the two sides agree to float rounding amplified by Adam's
# normalisation (m / sqrt(v) of a gradient near zero): seen up to 2.7e-5 when the suite runs in
# two worker processes, whose summation order differs, so the bound is 1e-4, not ATOL.
TRAINED_ATOL = 1e-4


def assert_weights_close(ours, theirs, what):
    for path, a, b in zip([w.path for w in theirs.weights], ours.get_weights(),
                          theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=TRAINED_ATOL, err_msg=f"{what}: {path}")


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_kiln_saves_keras_loads_safely_and_continues(tmp_path, suffix):
    keras = keras_oracle.real_keras()
    custom_classes(keras)
    peak_metric(keras, np_side=False)
    ours = build(kk, custom_classes(kk))
    compile_and_fit(ours, kk, peak_metric(kk, np_side=True))
    ours.save(tmp_path / f"ours{suffix}")
    theirs = keras.models.load_model(tmp_path / f"ours{suffix}", safe_mode=True)
    assert [type(layer).__name__ for layer in theirs.layers] == \
        ["InputLayer", "Dense", "ScaleShift", "Block", "Dense"]
    assert theirs.layers[2].gain == 2.0 and theirs.layers[3].units == 3
    assert [w.trainable for w in theirs.layers[2].weights] == [True, False]
    x, y = data()
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)),
                               ours.predict(x, verbose=0), rtol=RTOL, atol=ATOL)
    scores = theirs.evaluate(x, y, verbose=0, return_dict=True)
    assert scores == pytest.approx(ours.evaluate(x, y, verbose=0, return_dict=True), rel=1e-5)
    if suffix == ".keras":  # the optimizer's slots came along (Keras 3 restarts them on .h5)
        assert int(theirs.optimizer.iterations.numpy()) == 2
        fit_more(ours)
        fit_more(theirs)
        assert_weights_close(ours, theirs, "one more epoch on each side")


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_keras_saves_kiln_loads_and_continues(tmp_path, suffix):
    keras = keras_oracle.real_keras()
    theirs = build(keras, custom_classes(keras))
    compile_and_fit(theirs, keras, peak_metric(keras, np_side=False))
    theirs.save(tmp_path / f"theirs{suffix}")
    custom_classes(kk)
    peak = peak_metric(kk, np_side=True)
    ours = kk.models.load_model(tmp_path / f"theirs{suffix}")
    assert [type(layer).__name__ for layer in ours.layers] == \
        ["InputLayer", "Dense", "ScaleShift", "Block", "Dense"]
    assert ours._compile_metrics.user_metrics == [peak]
    assert [w.trainable for w in ours.layers[2].weights] == [True, False]
    x, _ = data()
    np.testing.assert_allclose(ours.predict(x, verbose=0),
                               np.asarray(theirs.predict(x, verbose=0)), rtol=RTOL, atol=ATOL)
    assert int(ours.optimizer.iterations) == 2
    fit_more(ours)
    fit_more(theirs)
    assert_weights_close(ours, theirs, "one more epoch on each side")


def _weights_layout(path):
    with zipfile.ZipFile(path) as archive:
        data_bytes = archive.read("model.weights.h5")
        config = json.loads(archive.read("config.json"))
    found = {}
    with h5py.File(io.BytesIO(data_bytes), "r") as h5:
        h5.visititems(lambda name, item: found.__setitem__(
            name, item.shape if isinstance(item, h5py.Dataset) else None))
        scale_shift = h5["layers/scale_shift/vars"]
        values = [np.asarray(scale_shift[str(i)]) for i in range(len(scale_shift))]
    return found, config, values


def test_weights_file_layout_and_config_entries_are_keras(tmp_path):
    keras = keras_oracle.real_keras()
    ours = build(kk, custom_classes(kk))
    theirs = build(keras, custom_classes(keras))
    ours.save(tmp_path / "ours.keras")
    theirs.save(tmp_path / "theirs.keras")
    our_layout, our_config, our_values = _weights_layout(tmp_path / "ours.keras")
    their_layout, their_config, _ = _weights_layout(tmp_path / "theirs.keras")
    assert our_layout == their_layout
    # the layer's own variables: trainable scale, then the non-trainable shift (all ones)
    assert "layers/block/dense/vars/0" in our_layout and "layers/block/parts/scale_shift/vars/1" \
        in our_layout
    np.testing.assert_array_equal(our_values[1], np.ones(5, np.float32))
    np.testing.assert_array_equal(our_values[0], ours.layers[2].scale.numpy())
    for ours_entry, theirs_entry in zip(our_config["config"]["layers"],
                                        their_config["config"]["layers"], strict=True):
        assert {key: ours_entry.get(key) for key in ("class_name", "registered_name",
                                                     "build_config")} == \
            {key: theirs_entry.get(key) for key in ("class_name", "registered_name",
                                                    "build_config")}
    assert our_config["config"]["layers"][3]["registered_name"] == f"{PACKAGE}>Block"


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_unregistered_classes_travel_through_custom_objects(tmp_path, suffix):
    keras = keras_oracle.real_keras()
    ours = build(kk, custom_classes(kk, register=False))
    ours.save(tmp_path / f"ours{suffix}")
    theirs_classes = custom_classes(keras, register=False)
    theirs = keras.models.load_model(
        tmp_path / f"ours{suffix}", safe_mode=True,
        custom_objects={cls.__name__: cls for cls in theirs_classes})
    x, _ = data()
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)),
                               ours.predict(x, verbose=0), rtol=RTOL, atol=ATOL)
    theirs.save(tmp_path / f"theirs{suffix}")
    kiln_classes = custom_classes(kk, register=False)
    with pytest.raises(ValueError, match=r"layer 'scaled' \(class ScaleShift\).*custom_objects"):
        kk.models.load_model(tmp_path / f"theirs{suffix}")
    back = kk.models.load_model(tmp_path / f"theirs{suffix}",
                                custom_objects={cls.__name__: cls for cls in kiln_classes})
    np.testing.assert_allclose(back.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)


def test_resuming_a_keras_file_equals_training_in_one_go(tmp_path):
    """Keras trains 2 epochs and saves; kiln loads and trains 1: the weights Keras reaches in 3
    epochs in one go. kiln's own file resumed the same way equals kiln's 3 epochs."""
    keras = keras_oracle.real_keras()
    classes = custom_classes(keras)
    metric = peak_metric(keras, np_side=False)
    straight = build(keras, classes)
    initial = straight.get_weights()
    compile_and_fit(straight, keras, metric, epochs=3)
    halfway = build(keras, classes)
    halfway.set_weights(initial)
    compile_and_fit(halfway, keras, metric, epochs=2)
    halfway.save(tmp_path / "halfway.keras")

    kiln_classes, kiln_metric = custom_classes(kk), peak_metric(kk, np_side=True)
    resumed = kk.models.load_model(tmp_path / "halfway.keras")
    fit_more(resumed)
    assert int(resumed.optimizer.iterations) == 6
    assert_weights_close(resumed, straight, "Keras 2 epochs + kiln 1 vs Keras 3")

    ours_straight = build(kk, kiln_classes)
    ours_straight.set_weights(initial)
    compile_and_fit(ours_straight, kk, kiln_metric, epochs=3)
    ours_halfway = build(kk, kiln_classes)
    ours_halfway.set_weights(initial)
    compile_and_fit(ours_halfway, kk, kiln_metric, epochs=2)
    ours_halfway.save(tmp_path / "ours_halfway.keras")
    ours_resumed = kk.models.load_model(tmp_path / "ours_halfway.keras")
    fit_more(ours_resumed)
    for a, b in zip(ours_resumed.get_weights(), ours_straight.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_lambda_in_a_keras_h5_file_is_refused_in_safe_mode(tmp_path):
    keras = keras_oracle.real_keras()
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Lambda(lambda t: t * 3.0, name="tripled")(inputs)).save(
        tmp_path / "lambda.h5")
    with pytest.raises(ValueError, match=r"lambda.h5.*'tripled' \(class Lambda\).*safe_mode"):
        kk.models.load_model(tmp_path / "lambda.h5")
    loaded = kk.models.load_model(tmp_path / "lambda.h5", safe_mode=False)
    np.testing.assert_allclose(loaded.predict(np.ones((1, 3), np.float32), verbose=0), 3.0)
