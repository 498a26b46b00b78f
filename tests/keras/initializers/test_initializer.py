"""keras.initializers' `Initializer` base class, `get` / `serialize` / `deserialize`, against
real Keras 3 (JAX backend): every name Keras knows, config dicts as Keras 3 and Keras 2 write
them, classes, instances, arrays and callables; a user's `Initializer` subclass used as a
layer's kernel_initializer, in the layer's config, and saved in a .keras file that loads here
(custom_objects, or register_keras_serializable) and in Keras."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.keras import initializers  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

NAMES = ["Identity", "Ones", "Zeros", "GlorotNormal", "GlorotUniform", "HeNormal",
         "HeUniform", "LecunNormal", "LecunUniform", "Orthogonal", "RandomNormal",
         "RandomUniform", "TruncatedNormal", "VarianceScaling", "identity", "ones",
         "zeros", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal",
         "lecun_uniform", "orthogonal", "random_normal", "random_uniform", "truncated_normal",
         "variance_scaling", "IdentityInitializer", "OrthogonalInitializer", "normal",
         "uniform", "one", "zero"]


@pytest.mark.parametrize("name", NAMES)
def test_get_by_name_gives_the_class_keras_gives(name):
    keras = real_keras()
    ours, theirs = initializers.get(name), keras.initializers.get(name)
    assert type(ours).__name__ == type(theirs).__name__
    assert isinstance(ours, initializers.Initializer)
    assert initializers.serialize(ours) == keras.initializers.serialize(theirs)


def test_constant_by_name_is_zero():
    """Keras 3.15's `get("constant")` fails (KeyError 'value' in Constant.from_config); kiln
    gives the class's default, as every other name does."""
    keras = real_keras()
    with pytest.raises(KeyError):
        keras.initializers.get("constant")
    for name in ("constant", "Constant"):
        made = initializers.get(name)
        assert type(made) is initializers.Constant and made.value == 0.0


def test_lowercase_names_are_the_classes():
    keras = real_keras()
    for name in ("glorot_uniform", "he_normal", "orthogonal", "zeros", "ones", "constant",
                 "identity", "random_normal", "truncated_normal", "variance_scaling"):
        ours = getattr(initializers, name)
        assert ours is type(initializers.get(name))
        assert ours.__name__ == getattr(keras.initializers, name).__name__
    assert initializers.glorot_uniform(seed=0).get_config()["seed"] == 0
    assert kk.initializers.Initializer is initializers.Initializer


def test_get_takes_what_keras_takes():
    real_keras()
    assert initializers.get(None) is None
    assert type(initializers.get(initializers.HeUniform)) is initializers.HeUniform
    made = initializers.RandomNormal(stddev=2.0)
    assert initializers.get(made) is made

    def function(shape, dtype=None):
        return np.full(shape, 7.0, dtype or "float32")

    assert initializers.get(function) is function
    values = np.arange(6.0).reshape(2, 3)
    fixed = initializers.get(values)
    np.testing.assert_array_equal(fixed((2, 3)), values)
    with pytest.raises(ValueError, match=r"Expected `shape` to be \(2, 3\)"):
        fixed((3, 2))
    # a Keras 2 config (no module) and a Keras 3 one
    legacy = initializers.get({"class_name": "VarianceScaling", "config": {
        "scale": 2.0, "mode": "fan_in", "distribution": "normal", "seed": None}})
    assert (legacy.scale, legacy.mode, legacy.distribution) == (2.0, "fan_in", "truncated_normal")
    old_tf_keras = initializers.get({"class_name": "GlorotUniform",
                                     "config": {"seed": None, "dtype": "float32"}})
    assert type(old_tf_keras) is initializers.GlorotUniform
    assert initializers.deserialize("he_normal").get_config()["seed"] is None
    assert initializers.deserialize({"module": "keras.initializers", "class_name": "HeNormal",
                                     "config": {"seed": 1}, "registered_name": None}).seed == 1
    assert kk.saving.deserialize_keras_object(initializers.serialize(made)).stddev == 2.0
    assert kk.saving.serialize_keras_object(made) == initializers.serialize(made)


@pytest.mark.parametrize("identifier, error, pattern", [
    ("Glorot_Uniform", ValueError, r"Dense 'd'.*kernel_initializer.*'Glorot_Uniform'"),
    (3, ValueError, r"Dense 'd'.*kernel_initializer.*interpret.*3"),
    ({"class_name": "Foo", "config": {}}, ValueError, r"Dense 'd'.*kernel_initializer.*'Foo'"),
    ({"config": {}}, ValueError, r"Dense 'd'.*kernel_initializer.*class_name"),
    ({"class_name": "VarianceScaling", "config": {"mode": "x"}}, ValueError,
     r"Dense 'd'.*kernel_initializer.*VarianceScaling.*mode"),
    ({"class_name": "GlorotUniform", "config": {"bogus": 1}}, TypeError,
     r"Dense 'd'.*kernel_initializer.*GlorotUniform.*bogus"),
])
def test_bad_identifiers_raise_keras_error_naming_the_argument(identifier, error, pattern):
    keras = real_keras()
    with pytest.raises(error):
        keras.initializers.get(identifier)
    with pytest.raises(error, match=pattern):
        initializers.get(identifier, "Dense 'd'", "kernel_initializer")
    with pytest.raises(error, match=pattern):
        kk.layers.Dense(2, kernel_initializer=identifier, name="d")


def test_keras_messages_without_a_layer():
    # Keras 3's STFT initializer (audio front ends) is not in kiln yet
    with pytest.raises(ValueError, match=r"Dense 'd'.*kernel_initializer.*'stft'"):
        kk.layers.Dense(2, kernel_initializer="stft", name="d")
    with pytest.raises(ValueError, match="Could not interpret initializer identifier: 'foo'"):
        initializers.get("foo")


# -- a user's initializer ---------------------------------------------------------------------
class ScaledOnes(initializers.Initializer):
    def __init__(self, scale=1.0):
        self.scale = scale

    def __call__(self, shape, dtype=None):
        return self.scale * np.ones(shape, dtype or "float32")

    def get_config(self):
        return {"scale": self.scale}


@kk.saving.register_keras_serializable(package="initializer_tests")
class Ramp(initializers.Initializer):
    """0, step, 2 step, ... over the weight, in its shape."""

    def __init__(self, step=1.0):
        self.step = step

    def __call__(self, shape, dtype=None):
        return self.step * np.arange(np.prod(shape), dtype=dtype or "float32").reshape(shape)

    def get_config(self):
        return {"step": self.step}


def keras_ramp(keras):
    @keras.saving.register_keras_serializable(package="initializer_tests", name="Ramp")
    class Ramp(keras.initializers.Initializer):
        def __init__(self, step=1.0):
            self.step = step

        def __call__(self, shape, dtype=None):
            return self.step * keras.ops.reshape(keras.ops.arange(np.prod(shape),
                                                                  dtype=dtype), shape)

        def get_config(self):
            return {"step": self.step}

    return Ramp


def test_custom_initializer_configs_as_keras_writes_them():
    keras = real_keras()

    class KerasScaledOnes(keras.initializers.Initializer):
        def __init__(self, scale=1.0):
            self.scale = scale

        def get_config(self):
            return {"scale": self.scale}

    KerasScaledOnes.__name__ = "ScaledOnes"
    KerasScaledOnes.__module__ = __name__
    theirs = keras.initializers.serialize(KerasScaledOnes(2.0))
    assert initializers.serialize(ScaledOnes(2.0)) == theirs
    assert initializers.serialize(Ramp(0.5)) == keras.initializers.serialize(
        keras_ramp(keras)(0.5)) | {"module": __name__}
    assert initializers.serialize(Ramp(0.5))["registered_name"] == "initializer_tests>Ramp"
    # a Dense with each: its config holds them, and a layer made from it draws the same
    dense = kk.layers.Dense(3, kernel_initializer=ScaledOnes(0.5), bias_initializer=Ramp(2.0))
    config = dense.get_config()
    assert config["kernel_initializer"]["config"] == {"scale": 0.5}
    with kk.saving.custom_object_scope({"ScaledOnes": ScaledOnes}):
        again = kk.layers.Dense.from_config(config)
    kk.Sequential([kk.Input((2,)), again])
    kernel, bias = again.get_weights()
    np.testing.assert_array_equal(kernel, np.full((2, 3), 0.5, np.float32))
    np.testing.assert_array_equal(bias, [0.0, 2.0, 4.0])
    with pytest.raises(ValueError, match=r"Dense.*kernel_initializer.*'ScaledOnes'"):
        kk.layers.Dense.from_config(config)


def test_custom_initializers_save_and_load_in_keras_files(tmp_path):
    """A .keras file of a model whose Dense uses a user's initializers loads back here (an
    unregistered class through custom_objects, a registered one by its name) and in Keras;
    a model made from the loaded config draws the custom values."""
    keras = real_keras()

    def build(K, kernel_initializer, bias_initializer):
        inputs = K.Input((2,))
        outputs = K.layers.Dense(3, kernel_initializer=kernel_initializer,
                                 bias_initializer=bias_initializer, name="d")(inputs)
        return K.Model(inputs, outputs)

    model = build(kk, ScaledOnes(0.5), Ramp(2.0))
    path = tmp_path / "custom.keras"
    model.save(path)
    with pytest.raises(ValueError, match="ScaledOnes"):
        kk.models.load_model(path)
    loaded = kk.models.load_model(path, custom_objects={"ScaledOnes": ScaledOnes})
    layer = loaded.get_layer("d")
    assert isinstance(layer.kernel_initializer, ScaledOnes)
    assert isinstance(layer.bias_initializer, Ramp) and layer.bias_initializer.step == 2.0
    fresh = kk.Model.from_config(loaded.get_config(), custom_objects={"ScaledOnes": ScaledOnes})
    np.testing.assert_array_equal(fresh.get_layer("d").get_weights()[1], [0.0, 2.0, 4.0])

    class KerasScaledOnes(keras.initializers.Initializer):
        def __init__(self, scale=1.0):
            self.scale = scale

        def __call__(self, shape, dtype=None):
            return self.scale * keras.ops.ones(shape, dtype=dtype)

        def get_config(self):
            return {"scale": self.scale}

    keras_ramp(keras)
    theirs = keras.models.load_model(path, custom_objects={"ScaledOnes": KerasScaledOnes},
                                     compile=False)
    assert theirs.get_layer("d").kernel_initializer.scale == 0.5
    assert theirs.get_layer("d").bias_initializer.step == 2.0
    np.testing.assert_array_equal(theirs.get_weights()[0], model.get_weights()[0])


def test_base_class_as_keras():
    keras = real_keras()
    with pytest.raises(NotImplementedError, match="__call__"):
        initializers.Initializer()((2,))
    with pytest.raises(NotImplementedError):
        keras.initializers.Initializer()((2,))
    copy = ScaledOnes(3.0).clone()
    assert isinstance(copy, ScaledOnes) and copy.scale == 3.0
    assert ScaledOnes.from_config({"scale": 2.0}).scale == 2.0
