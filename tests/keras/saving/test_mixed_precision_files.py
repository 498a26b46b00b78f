"""Model files under the mixed_bfloat16 policy against real Keras 3 (JAX backend): Keras writes
each layer's DTypePolicy (the InputLayer's dtype stays 'float32'); kiln loads such a file as a
bf16 model and writes its own layers' policy the same way, in .keras and .h5 files. kiln runs
one policy per model, so a file mixing policies across compute layers is refused by name."""

import json
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
sys.path.insert(0, str(Path(__file__).parent))

import keras_oracle  # noqa: E402
import models_for_saving  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.keras import mixed_precision  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env", "float32_afterwards")
# bf16 keeps 8 bits of mantissa: two frameworks rounding in different places differ by a few
# units of 2**-8 on these softmax outputs
BF16_ATOL = 3e-2
CASES = [(name, suffix) for name in ("sequential_cnn", "resnet_block")
         for suffix in (".keras", ".h5")]
needs_native_bf16 = pytest.mark.skipif(not mixed_precision.native_bf16(),
                                       reason="kiln keeps float32 without native bf16")


@pytest.fixture
def float32_afterwards():
    yield
    mixed_precision._global[0] = mixed_precision.Policy("float32")
    keras = sys.modules.get("keras")
    if keras is not None:
        keras.mixed_precision.set_global_policy("float32")


def _keras_bf16_file(tmp_path, name, suffix):
    """A model Keras built, trained one epoch and saved under mixed_bfloat16; its predictions."""
    keras = keras_oracle.real_keras()
    x, y = models_for_saving.data()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        theirs = models_for_saving.BUILDERS[name](keras)
        theirs.compile(optimizer="adam", loss="categorical_crossentropy")
        theirs.fit(x, y, batch_size=8, epochs=1, verbose=0)
        path = tmp_path / f"theirs{suffix}"
        theirs.save(path)
        expected = np.asarray(theirs.predict(x, verbose=0)).astype("float32")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return path, x, expected


@needs_native_bf16
@pytest.mark.parametrize("name, suffix", CASES)
def test_keras_saves_bf16_kiln_loads_a_bf16_model(tmp_path, name, suffix):
    path, x, expected = _keras_bf16_file(tmp_path, name, suffix)
    ours = kk.models.load_model(path)  # kiln's global policy is float32: the file decides
    assert ours.compute_dtype == "bfloat16"
    assert {layer.policy_name for layer in ours.layers[1:]} == {"mixed_bfloat16"}
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected, atol=BF16_ATOL)


@needs_native_bf16
@pytest.mark.parametrize("name, suffix", CASES)
def test_kiln_saves_bf16_keras_loads_mixed_bfloat16_layers(tmp_path, name, suffix):
    keras = keras_oracle.real_keras()
    x, y = models_for_saving.data()
    kk.mixed_precision.set_global_policy("mixed_bfloat16")
    ours = models_for_saving.BUILDERS[name](kk)
    ours.compile(optimizer="adam", loss="categorical_crossentropy")
    ours.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert ours.compute_dtype == "bfloat16"
    path = tmp_path / f"ours{suffix}"
    ours.save(path)
    kk.mixed_precision.set_global_policy("float32")
    theirs = keras.models.load_model(path, safe_mode=True)  # Keras's global policy: float32
    policies = {layer.name: layer.dtype_policy.name for layer in theirs.layers
                if not isinstance(layer, keras.layers.InputLayer)}
    assert set(policies.values()) == {"mixed_bfloat16"}, policies
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)).astype("float32"),
                               ours.predict(x, verbose=0), atol=BF16_ATOL)
    # and kiln reads its own file back as bf16 whatever the global policy
    again = kk.models.load_model(path)
    assert again.compute_dtype == "bfloat16"
    np.testing.assert_array_equal(again.predict(x, verbose=0), ours.predict(x, verbose=0))


def test_float32_file_stays_float32_under_a_bf16_global_policy(tmp_path):
    x, _ = models_for_saving.data()
    ours = models_for_saving.sequential_cnn(kk)
    ours.save(tmp_path / "f32.keras")
    kk.mixed_precision.set_global_policy("mixed_bfloat16")  # warns where bf16 is not native
    loaded = kk.models.load_model(tmp_path / "f32.keras")
    assert loaded.compute_dtype == "float32"
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), ours.predict(x, verbose=0))


def test_without_native_bf16_a_bf16_file_loads_as_float32_with_one_warning(tmp_path,
                                                                          monkeypatch):
    path, x, expected = _keras_bf16_file(tmp_path, "sequential_cnn", ".keras")
    monkeypatch.setattr(mixed_precision, "native_bf16", lambda: False)
    with pytest.warns(UserWarning, match="no native bf16") as caught:
        ours = kk.models.load_model(path)
    assert len([w for w in caught if "bf16" in str(w.message)]) == 1
    assert ours.compute_dtype == "float32"
    np.testing.assert_allclose(ours.predict(x, verbose=0), expected, atol=BF16_ATOL)


def _rewrite_config(source, target, change):
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data = old.read(info.filename)
            if info.filename == "config.json":
                config = json.loads(data)
                change(config)
                data = json.dumps(config).encode()
            new.writestr(info, data)


def test_a_file_mixing_policies_is_refused_naming_the_layer(tmp_path):
    path, _, _ = _keras_bf16_file(tmp_path, "sequential_cnn", ".keras")

    def one_dense_float32(config):
        layer = next(entry for entry in config["config"]["layers"]
                     if entry["class_name"] == "Dense")
        layer["config"]["dtype"]["config"]["name"] = "float32"
        layer["config"]["dtype"].pop("shared_object_id", None)

    mixed = tmp_path / "mixed.keras"
    _rewrite_config(path, mixed, one_dense_float32)
    with pytest.raises(ValueError, match=r"Dense 'dense[_0-9]*': argument dtype is 'float32' "
                                         r"but Conv2D .*'mixed_bfloat16'.*one policy per model"):
        kk.models.load_model(mixed)


def test_an_unknown_policy_is_refused_with_the_accepted_values():
    config = models_for_saving.sequential_cnn(kk).get_config()
    config["layers"][1]["config"]["dtype"]["config"]["name"] = "mixed_float16"
    with pytest.raises(ValueError, match=r"Conv2D .*argument dtype must be one of "
                                         r"\['float32', 'mixed_bfloat16'\]"):
        kk.Sequential.from_config(config)
    with pytest.raises(ValueError, match=r"argument dtype must be one of \['float32', "
                                         r"'int32', 'int64'\]"):
        kk.layers.InputLayer(shape=(3,), dtype="mixed_bfloat16")


def test_a_layer_given_a_policy_sets_the_models(tmp_path):
    inputs = kk.Input((4,))
    model = kk.Model(inputs, kk.layers.Dense(2, dtype="mixed_bfloat16")(inputs))
    expected = "bfloat16" if mixed_precision.native_bf16() else "float32"
    assert model.compute_dtype == expected
    with pytest.raises(ValueError, match="one policy per model"):
        x = kk.layers.Dense(3, dtype="mixed_bfloat16")(inputs)
        kk.Model(inputs, kk.layers.Dense(2, dtype="float32")(x))
