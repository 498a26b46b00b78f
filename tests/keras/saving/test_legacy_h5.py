"""Keras 2's legacy `.h5` model file: kiln writes tf.keras's layout, real Keras 3 loads it
(`keras.models.load_model`, safe_mode=True) with equal predictions and its compile state; kiln
loads Keras 3's legacy files and a hand-made tf.keras file (RMSprop slots in tf.keras's order,
Keras 2.0's list-shaped Sequential config), and resumes its own files exactly."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
sys.path.insert(0, str(Path(__file__).parent))

import h5py  # noqa: E402
import keras_oracle  # noqa: E402
import models_for_saving  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from models_for_saving import CASES  # noqa: E402
from models_for_saving import compile_model as _compile  # noqa: E402
from models_for_saving import fit as _fit  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")
RTOL, ATOL = keras_oracle.RTOL, keras_oracle.ATOL


def _names(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def test_file_layout_is_keras2(tmp_path):
    x, y = models_for_saving.data()
    model = models_for_saving.sequential_cnn(kk)
    _compile(model, kk)
    _fit(model, x, y)
    model.save(tmp_path / "m.h5")
    with h5py.File(tmp_path / "m.h5") as h5:
        assert {"keras_version", "backend", "model_config", "training_config"} <= set(h5.attrs)
        config = json.loads(h5.attrs["model_config"])
        assert config["class_name"] == "Sequential"
        first = config["config"]["layers"][0]
        assert first["class_name"] == "InputLayer" and "module" not in first
        assert first["config"]["batch_input_shape"] == [None, 8, 8, 3]
        conv = config["config"]["layers"][1]["config"]
        assert conv["dtype"] == "float32"
        assert conv["kernel_initializer"] == {"class_name": "GlorotUniform",
                                              "config": {"seed": None, "input_axes": None,
                                                         "output_axes": None}}
        training = json.loads(h5.attrs["training_config"])
        assert training["loss"] == "categorical_crossentropy"
        assert training["optimizer_config"]["class_name"] == "Adam"
        weights = h5["model_weights"]
        assert _names(weights.attrs["layer_names"]) == [layer.name for layer in model.layers]
        conv_name = model.layers[0].name
        assert _names(weights[conv_name].attrs["weight_names"]) == \
            [f"{conv_name}/kernel:0", f"{conv_name}/bias:0"]
        np.testing.assert_array_equal(weights[conv_name][f"{conv_name}/kernel:0"][()],
                                      model.layers[0].get_weights()[0])
        optimizer = _names(h5["optimizer_weights"].attrs["weight_names"])
        count = len(model.trainable_weights)
        assert optimizer[0] == "Adam/iter:0" and len(optimizer) == 1 + 2 * count
        assert optimizer[1] == f"Adam/{conv_name}/kernel/m:0"
        assert optimizer[1 + count] == f"Adam/{conv_name}/kernel/v:0"
        assert int(h5["optimizer_weights"]["Adam/iter:0"][()]) == 2


@pytest.mark.parametrize("name, data_format", CASES)
def test_kiln_saves_keras_loads(tmp_path, name, data_format):
    keras = keras_oracle.real_keras()
    x, y = models_for_saving.data(data_format)
    ours = models_for_saving.BUILDERS[name](kk, data_format)
    _compile(ours, kk)
    _fit(ours, x, y)
    ours.save(tmp_path / "model.h5")
    theirs = keras.models.load_model(tmp_path / "model.h5", safe_mode=True)
    assert [layer.trainable for layer in theirs.layers] == \
        [layer.trainable for layer in ours.layers]
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)
    assert type(theirs.optimizer).__name__ == "Adam"
    assert float(theirs.optimizer.learning_rate) == pytest.approx(0.01)


@pytest.mark.parametrize("name, data_format", CASES)
def test_keras_saves_kiln_loads_and_continues(tmp_path, name, data_format):
    keras = keras_oracle.real_keras()
    x, y = models_for_saving.data(data_format)
    theirs = models_for_saving.BUILDERS[name](keras, data_format)
    _compile(theirs, keras)
    _fit(theirs, x, y)
    theirs.save(tmp_path / "model.h5")
    ours = kk.models.load_model(tmp_path / "model.h5")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)
    assert int(ours.optimizer.iterations) == 2
    _fit(theirs, x, y)
    _fit(ours, x, y)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_resume_from_h5_equals_training_in_one_go(tmp_path):
    x, y = models_for_saving.data()
    straight = models_for_saving.resnet_block(kk)
    initial = straight.get_weights()
    _compile(straight, kk)
    _fit(straight, x, y, epochs=3)
    resumed = models_for_saving.resnet_block(kk)
    resumed.set_weights(initial)
    _compile(resumed, kk)
    _fit(resumed, x, y, epochs=2)
    resumed.save(tmp_path / "halfway.h5")
    loaded = kk.models.load_model(tmp_path / "halfway.h5")
    _fit(loaded, x, y)
    for a, b in zip(loaded.get_weights(), straight.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def _tf_keras_file(path, kernel, bias, rms, iterations, keras22=False):
    """What tf.keras 2 wrote for a Keras 2.0-style Sequential (config = its layer list) with
    RMSprop: optimizer weights named '<Optimizer>/iter:0', '<Optimizer>/<weight>/rms:0'."""
    layers = [{"class_name": "Dense", "config": {
        "name": "dense_1", "trainable": True, "batch_input_shape": [None, 4],
        "dtype": "float32", "units": 3, "activation": "softmax", "use_bias": True,
        # how Keras 2.0-2.2 saved glorot_uniform
        "kernel_initializer": {"class_name": "VarianceScaling", "config": {
            "scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}},
        "bias_initializer": {"class_name": "Zeros", "config": {}},
        "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
        "kernel_constraint": None, "bias_constraint": None}}]
    training = {"loss": "categorical_crossentropy", "metrics": ["accuracy"],
                "weighted_metrics": None, "loss_weights": None, "optimizer_config": {
                    "class_name": "RMSprop", "config": {
                        "name": "RMSprop", "learning_rate": 0.01, "rho": 0.9,
                        "momentum": 0.0, "epsilon": 1e-07, "centered": False}}}
    with h5py.File(path, "w") as h5:
        h5.attrs["keras_version"] = b"2.4.0"
        h5.attrs["backend"] = b"tensorflow"
        h5.attrs["model_config"] = json.dumps({"class_name": "Sequential",
                                               "config": layers}).encode()
        h5.attrs["training_config"] = json.dumps(training).encode()
        weights = h5.create_group("model_weights")
        weights.attrs["layer_names"] = [b"dense_1"]
        dense = weights.create_group("dense_1")
        dense.attrs["weight_names"] = [b"dense_1/kernel:0", b"dense_1/bias:0"]
        dense["dense_1/kernel:0"], dense["dense_1/bias:0"] = kernel, bias
        optimizer = h5.create_group("optimizer_weights")
        names = ["RMSprop/iter:0", "RMSprop/dense_1/kernel/rms:0", "RMSprop/dense_1/bias/rms:0"]
        values = [np.int64(iterations), *rms]
        if keras22:  # Keras 2.2's RMSprop: its accumulators only, with generic names
            names = ["training/RMSprop/Variable:0", "training/RMSprop/Variable_1:0"]
            values = rms
        optimizer.attrs["weight_names"] = [name.encode() for name in names]
        for name, value in zip(names, values, strict=True):
            optimizer[name] = value


@pytest.mark.parametrize("keras22", [False, True])
def test_tf_keras_file_with_rmsprop_slots(tmp_path, keras22):
    """Such a file loads with its slots: one more step equals Keras 3 given the same optimizer
    variables. An initializer kiln does not have is refused by name."""
    keras = keras_oracle.real_keras()
    random = np.random.RandomState(5)
    kernel, bias = random.randn(4, 3).astype("float32"), random.randn(3).astype("float32")
    rms = [random.rand(4, 3).astype("float32"), random.rand(3).astype("float32")]
    path = tmp_path / "keras2.h5"
    _tf_keras_file(path, kernel, bias, rms, iterations=7, keras22=keras22)
    ours = kk.models.load_model(path)
    iterations = 0 if keras22 else 7
    assert int(ours.optimizer.iterations) == iterations
    np.testing.assert_array_equal(ours.get_weights()[0], kernel)

    x = random.rand(6, 4).astype("float32")
    y = np.eye(3, dtype="float32")[random.randint(0, 3, 6)]
    theirs = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])
    theirs.set_weights([kernel, bias])
    theirs.compile(optimizer=keras.optimizers.RMSprop(0.01), loss="categorical_crossentropy")
    theirs.optimizer.build(theirs.trainable_variables)
    for variable, value in zip(theirs.optimizer.variables, [iterations, 0.01, *rms],
                               strict=True):
        variable.assign(value)
    _fit(theirs, x, y, batch_size=6)
    _fit(ours, x, y, batch_size=6)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)

    with h5py.File(path, "r+") as h5:
        config = h5.attrs["model_config"]
        config = config.decode() if isinstance(config, bytes) else config
        h5.attrs["model_config"] = config.replace('"uniform"', '"orthogonal"').encode()
    with pytest.raises(ValueError, match="dense_1.*kernel_initializer.*VarianceScaling"):
        kk.models.load_model(path)


@pytest.mark.parametrize("damage, message", [
    (lambda h5: h5.attrs.__delitem__("model_config"), "model_config"),
    (lambda h5: h5.attrs.__setitem__("model_config", b"{oops"), "not valid JSON"),
    (lambda h5: h5["model_weights"].attrs.__setitem__(
        "layer_names", h5["model_weights"].attrs["layer_names"][:1]), "weights for 1 layers"),
    (lambda h5: h5.__delitem__("model_weights"), "model_weights"),
])
def test_damaged_h5_files(tmp_path, damage, message):
    model = models_for_saving.sequential_cnn(kk)
    path = tmp_path / "damaged.h5"
    model.save(path)
    with h5py.File(path, "r+") as h5:
        damage(h5)
    with pytest.raises(ValueError, match=message) as error:
        kk.models.load_model(path)
    assert "damaged.h5" in str(error.value)


def test_wrong_weight_shape_names_layer_and_shape(tmp_path):
    model = models_for_saving.sequential_cnn(kk)
    path = tmp_path / "shape.h5"
    model.save(path)
    conv = model.layers[0].name
    with h5py.File(path, "r+") as h5:
        del h5["model_weights"][conv][f"{conv}/bias:0"]
        h5["model_weights"][conv][f"{conv}/bias:0"] = np.zeros(7, "float32")
    with pytest.raises(ValueError, match=rf"{conv}/bias:0.*\(7,\).*\(4,\)"):
        kk.models.load_model(path)


def test_a_layer_with_a_weight_missing_names_the_layer_and_the_counts(tmp_path):
    model = models_for_saving.sequential_cnn(kk)
    path = tmp_path / "count.h5"
    model.save(path)
    conv = model.layers[0].name
    with h5py.File(path, "r+") as h5:  # the bias gone from the layer's group and its list
        group = h5["model_weights"][conv]
        del group[f"{conv}/bias:0"]
        group.attrs["weight_names"] = group.attrs["weight_names"][:1]
    with pytest.raises(ValueError, match=rf"count.h5: layer '{conv}' holds 1 weights, Conv2D "
                                         rf"'{conv}' expects 2 \[\(3, 3, 3, 4\), \(4,\)\]"):
        kk.models.load_model(path)


@pytest.mark.parametrize("kept", [0.5, 0.9])
def test_a_truncated_h5_model_file_is_refused_naming_it(tmp_path, kept):
    model = models_for_saving.sequential_cnn(kk)
    path = tmp_path / "truncated.h5"
    model.save(path)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * kept)])
    with pytest.raises(ValueError, match="truncated.h5"):
        kk.models.load_model(path)


def test_classic_cifar10_cnn_ending(tmp_path):
    """The Keras 2 example's model (input_shape on the first layer, Activation layers, Keras
    2's rmsprop(lr=..., decay=...)) saved as its last line does, opened by Keras 3 and kiln."""
    keras = keras_oracle.real_keras()
    L = kk.layers
    model = kk.models.Sequential()
    model.add(L.Conv2D(8, (3, 3), padding="same", input_shape=(16, 16, 3)))
    model.add(L.Activation("relu"))
    model.add(L.MaxPooling2D(pool_size=(2, 2)))
    model.add(L.Dropout(0.25))
    model.add(L.Flatten())
    model.add(L.Dense(10))
    model.add(L.Activation("softmax"))
    model.compile(loss="categorical_crossentropy",
                  optimizer=kk.optimizers.rmsprop(lr=0.0001, decay=1e-6), metrics=["accuracy"])
    random = np.random.RandomState(2)
    x = random.rand(32, 16, 16, 3).astype("float32")
    y = np.eye(10, dtype="float32")[np.arange(32) % 10]
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    path = tmp_path / "keras_cifar10_trained_model.h5"
    model.save(str(path))
    theirs = keras.models.load_model(path)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)
    ours = kk.models.load_model(path)
    assert ours.optimizer.get_config()["decay"] == pytest.approx(1e-6)
    assert int(ours.optimizer.iterations) == 2
    assert ours.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))


@pytest.mark.parametrize("functional_inner", [False, True])
def test_nested_models_both_ways(tmp_path, functional_inner):
    """A model used as a layer: its whole weight list sits in its group, as Keras 2 wrote it."""
    keras = keras_oracle.real_keras()
    x, _ = models_for_saving.data()
    ours = models_for_saving.nested(kk, functional_inner)
    ours.save(tmp_path / "ours.h5")
    theirs = keras.models.load_model(tmp_path / "ours.h5")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)
    again = kk.models.load_model(tmp_path / "ours.h5")
    np.testing.assert_array_equal(again.predict(x, verbose=0), ours.predict(x, verbose=0))
    theirs = models_for_saving.nested(keras, functional_inner)
    theirs.save(tmp_path / "theirs.h5")
    loaded = kk.models.load_model(tmp_path / "theirs.h5")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)
