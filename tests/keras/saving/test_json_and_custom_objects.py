"""`model.to_json()` / `keras.models.model_from_json()` both ways with real Keras, and user
objects: a metric function registered with `register_keras_serializable` (or passed in
`custom_objects`) saves and loads on both sides, an unregistered one by name as Keras 3 does;
a registered custom loss loads compiled; what kiln cannot run is refused by name (a custom
layer class it does not know; a loss it cannot trace leaves the loaded model uncompiled with
a warning)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper
sys.path.insert(0, str(Path(__file__).parent))

import keras_oracle  # noqa: E402
import models_for_saving  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


@kk.saving.register_keras_serializable(package="saving_tests")
def mean_prediction(y_true, y_pred):
    return np.mean(y_pred, axis=-1)


def _keras_mean_prediction(keras):
    @keras.saving.register_keras_serializable(package="saving_tests", name="mean_prediction")
    def mean_prediction(y_true, y_pred):
        return keras.ops.mean(y_pred, axis=-1)

    return mean_prediction


@pytest.mark.parametrize("name", sorted(models_for_saving.BUILDERS))
def test_json_both_ways(name):
    keras = keras_oracle.real_keras()
    ours = models_for_saving.BUILDERS[name](kk)
    text = ours.to_json()
    assert set(json.loads(text)) == {"module", "class_name", "config", "registered_name",
                                     "build_config"}
    theirs = keras.models.model_from_json(text)
    assert [layer.name for layer in theirs.layers] == [layer.name for layer in ours.layers]
    theirs.set_weights(ours.get_weights())
    x, _ = models_for_saving.data()
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    back = kk.models.model_from_json(theirs.to_json())
    assert [layer.name for layer in back.layers] == [layer.name for layer in ours.layers]
    assert [w.shape for w in back.weights] == [w.shape for w in ours.weights]


def test_model_from_json_refuses_bad_text():
    with pytest.raises(ValueError, match="not valid JSON"):
        kk.models.model_from_json("{nope")
    with pytest.raises(ValueError, match="class_name"):
        kk.models.model_from_json("[1, 2]")


def test_registered_metric_function_saves_and_loads_both_ways(tmp_path):
    keras = keras_oracle.real_keras()
    theirs_metric = _keras_mean_prediction(keras)
    x, y = models_for_saving.data()
    model = models_for_saving.sequential_cnn(kk)
    model.compile(optimizer="adam", loss="categorical_crossentropy",
                  metrics=["accuracy", mean_prediction])
    model.fit(x, y, batch_size=8, verbose=0)
    model.save(tmp_path / "custom.keras")
    loaded = kk.models.load_model(tmp_path / "custom.keras")
    assert loaded._compile_metrics.user_metrics == ["accuracy", mean_prediction]
    assert loaded.evaluate(x, y, verbose=0, return_dict=True) == \
        pytest.approx(model.evaluate(x, y, verbose=0, return_dict=True))
    theirs = keras.models.load_model(tmp_path / "custom.keras")
    scores = theirs.evaluate(x, y, verbose=0, return_dict=True)
    assert scores["mean_prediction"] == pytest.approx(1 / 3, rel=1e-5)
    assert theirs.compiled
    del theirs_metric


def test_custom_objects_resolve_an_unregistered_name(tmp_path):
    keras = keras_oracle.real_keras()

    @keras.saving.register_keras_serializable(package="elsewhere", name="half")
    def half(y_true, y_pred):
        return keras.ops.mean(y_pred, axis=-1) * 0.5

    x, y = models_for_saving.data()
    theirs = models_for_saving.sequential_cnn(keras)
    theirs.compile(optimizer="adam", loss="categorical_crossentropy", metrics=[half])
    theirs.fit(x, y, batch_size=8, verbose=0)
    theirs.save(tmp_path / "half.keras")

    def half(y_true, y_pred):  # noqa: F811 (kiln's own version of Keras's function)
        return np.mean(y_pred, axis=-1) * 0.5

    kiln_half = half

    with pytest.warns(UserWarning, match="elsewhere>half"):  # unknown: left uncompiled
        assert not kk.models.load_model(tmp_path / "half.keras").compiled
    loaded = kk.models.load_model(tmp_path / "half.keras",
                                  custom_objects={"elsewhere>half": kiln_half})
    assert loaded.evaluate(x, y, verbose=0, return_dict=True)["half"] == \
        pytest.approx(1 / 6, rel=1e-5)
    with kk.saving.custom_object_scope({"elsewhere>half": kiln_half}):
        assert kk.models.load_model(tmp_path / "half.keras").compiled


def test_an_unregistered_function_is_saved_by_name_and_loads_through_custom_objects(tmp_path):
    """As Keras 3: the file names the function; loading finds it only in custom_objects."""
    def my_metric(y_true, y_pred):
        return np.mean(y_pred, axis=-1)

    model = models_for_saving.sequential_cnn(kk)
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=[my_metric])
    model.save(tmp_path / "m.keras")
    with pytest.warns(UserWarning, match="my_metric"):  # unknown: left uncompiled
        assert not kk.models.load_model(tmp_path / "m.keras").compiled
    assert kk.models.load_model(tmp_path / "m.keras",
                                custom_objects={"my_metric": my_metric}).compiled


def test_a_registered_custom_loss_loads_compiled_and_evaluates_as_keras(tmp_path):
    keras = keras_oracle.real_keras()

    @keras.saving.register_keras_serializable(package="saving_tests", name="my_loss")
    def my_loss(y_true, y_pred):
        return keras.ops.mean((y_true - y_pred) ** 2, axis=-1)

    @kk.saving.register_keras_serializable(package="saving_tests", name="my_loss")
    def kiln_loss(y_true, y_pred):
        return kk.ops.mean((y_true - y_pred) ** 2, axis=-1)

    theirs = models_for_saving.sequential_cnn(keras)
    theirs.compile(optimizer="adam", loss=my_loss)
    theirs.save(tmp_path / "loss.keras")
    ours = kk.models.load_model(tmp_path / "loss.keras")
    assert ours.compiled
    x, y = models_for_saving.data()
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert ours.evaluate(x, y, verbose=0) == pytest.approx(
        float(theirs.evaluate(x, y, verbose=0)), rel=1e-5)

    def numpy_loss(y_true, y_pred):  # kiln's version written with numpy: cannot be traced
        return np.mean((y_true - y_pred) ** 2, axis=-1)

    with pytest.warns(UserWarning, match="could not be compiled.*keras.ops"):
        assert not kk.models.load_model(tmp_path / "loss.keras", custom_objects={
            "saving_tests>my_loss": numpy_loss}).compiled


def test_custom_layer_is_refused_by_class_name(tmp_path):
    keras = keras_oracle.real_keras()

    @keras.saving.register_keras_serializable(package="saving_tests")
    class Doubler(keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2

    inputs = keras.Input((4,))
    theirs = keras.Model(inputs, keras.layers.Dense(2)(Doubler(name="twice")(inputs)))
    theirs.save(tmp_path / "layer.keras")
    with pytest.raises(ValueError, match=r"layer 'twice' \(class Doubler\).*keras.ops"):
        kk.models.load_model(tmp_path / "layer.keras")


@pytest.mark.parametrize("name", sorted(models_for_saving.BUILDERS))
def test_clone_model_has_the_architecture_and_fresh_weights(name):
    model = models_for_saving.BUILDERS[name](kk)
    clone = kk.models.clone_model(model)
    assert type(clone) is type(model)
    assert [(type(a).__name__, a.name, a.trainable) for a in clone.layers] == \
        [(type(b).__name__, b.name, b.trainable) for b in model.layers]
    assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
    assert not all(np.array_equal(a, b) for a, b in zip(clone.get_weights(), model.get_weights(),
                                                         strict=True))
    clone.set_weights(model.get_weights())
    x, _ = models_for_saving.data()
    np.testing.assert_array_equal(clone.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(ValueError, match="clone_function"):
        kk.models.clone_model(model, clone_function=lambda layer: layer)
