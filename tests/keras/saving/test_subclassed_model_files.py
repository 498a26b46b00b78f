"""Subclassed models (`class Net(keras.Model)`) in .keras files against real Keras 3 (JAX
backend): saved under their class name with their constructor arguments and the input shape of
their first call (build_config); loaded with the class in custom_objects (or registered), built
from that shape, then given the weights Keras laid out by attribute, and the optimizer state."""

import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import json  # noqa: E402

import keras_oracle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")
RTOL, ATOL = keras_oracle.RTOL, keras_oracle.ATOL


class Net(kk.Model):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.hidden = kk.layers.Dense(4, activation="relu")
        self.out = kk.layers.Dense(units)

    def call(self, x):
        return self.out(self.hidden(x))


def keras_net_class(keras):
    class KerasNet(keras.Model):
        def __init__(self, units=2, **kwargs):
            super().__init__(**kwargs)
            self.hidden = keras.layers.Dense(4, activation="relu")
            self.out = keras.layers.Dense(units)

        def call(self, x):
            return self.out(self.hidden(x))

    return KerasNet


def _data():
    random = np.random.RandomState(0)
    return random.rand(8, 3).astype("float32"), random.rand(8, 2).astype("float32")


def _fit(model, x, y):
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)


def test_keras_saves_a_subclassed_model_kiln_loads_and_continues(tmp_path):
    keras = keras_oracle.real_keras()
    x, y = _data()
    theirs = keras_net_class(keras)()
    theirs.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
    _fit(theirs, x, y)
    theirs.save(tmp_path / "theirs.keras")
    ours = kk.models.load_model(tmp_path / "theirs.keras", custom_objects={"KerasNet": Net})
    assert isinstance(ours, Net) and ours.compiled
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=RTOL, atol=ATOL)
    _fit(theirs, x, y)  # both continue from the saved Adam state
    _fit(ours, x, y)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def test_kiln_saves_a_subclassed_model_keras_loads_it(tmp_path):
    keras = keras_oracle.real_keras()
    x, y = _data()
    ours = Net(units=2)
    ours.compile(optimizer=kk.optimizers.Adam(learning_rate=0.01), loss="mse")
    _fit(ours, x, y)
    ours.save(tmp_path / "ours.keras")
    config = json.loads(zipfile.ZipFile(tmp_path / "ours.keras").read("config.json"))
    assert (config["class_name"], config["registered_name"]) == ("Net", "Net")
    assert config["config"]["units"] == 2 and config["build_config"] == {"input_shape": [None, 3]}
    theirs = keras.models.load_model(tmp_path / "ours.keras", safe_mode=True,
                                     custom_objects={"Net": keras_net_class(keras)})
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)),
                               ours.predict(x, verbose=0), rtol=RTOL, atol=ATOL)
    again = kk.models.load_model(tmp_path / "ours.keras", custom_objects={"Net": Net})
    np.testing.assert_array_equal(again.predict(x, verbose=0), ours.predict(x, verbose=0))


def test_a_registered_subclassed_model_loads_without_custom_objects(tmp_path):
    @kk.saving.register_keras_serializable(package="subclassed_test")
    class Registered(Net):
        pass

    x, _ = _data()
    model = Registered(units=3)
    model.predict(x, verbose=0)
    model.save(tmp_path / "registered.keras")
    loaded = kk.models.load_model(tmp_path / "registered.keras")
    assert type(loaded) is Registered and loaded.out.units == 3
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_loading_a_subclassed_model_without_its_class_names_the_class(tmp_path):
    model = Net()
    model.build((None, 3))
    model.save(tmp_path / "net.keras")
    with pytest.raises(ValueError, match="class Net is not a kiln layer.*custom_objects"):
        kk.models.load_model(tmp_path / "net.keras")


def test_subclassed_models_that_cannot_be_saved_are_refused_before_writing(tmp_path):
    class Unbuilt(Net):
        pass

    with pytest.raises(ValueError, match="Unbuilt 'unbuilt.*' is not built yet"):
        Unbuilt().save(tmp_path / "unbuilt.keras")

    class TakesALayer(kk.Model):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def call(self, x):
            return self.inner(x)

    model = TakesALayer(kk.layers.Dense(2))
    model.build((None, 3))
    with pytest.raises(ValueError, match="constructor of TakesALayer takes arguments that "
                                         "are not plain values"):
        model.save(tmp_path / "layer_arg.keras")
    with pytest.raises(ValueError, match="Keras 2's .h5 format cannot describe"):
        model.save(tmp_path / "net.h5")
    assert not list(tmp_path.iterdir())


def test_a_subclassed_model_file_without_build_config_is_refused(tmp_path):
    model = Net()
    model.build((None, 3))
    model.save(tmp_path / "net.keras")
    with zipfile.ZipFile(tmp_path / "net.keras") as old, \
            zipfile.ZipFile(tmp_path / "no_build.keras", "w") as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename == "config.json":
                config = json.loads(data)
                del config["build_config"]
                data = json.dumps(config).encode()
            new.writestr(info, data)
    with pytest.raises(ValueError, match="no_build.keras: subclassed model Net .*build_config"):
        kk.models.load_model(tmp_path / "no_build.keras", custom_objects={"Net": Net})
