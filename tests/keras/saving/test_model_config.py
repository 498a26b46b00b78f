"""get_config / from_config against real Keras 3: every kiln layer's config is the one Keras
writes (Keras's from_config accepts it and gives it back unchanged), and whole Sequential and
Functional configs cross both ways with the same layers and, with the same weights, the same
predictions."""

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
L = kk.layers

LAYERS = {
    "conv": lambda: L.Conv2D(4, (3, 2), strides=2, padding="same", activation="relu",
                             kernel_initializer="he_normal", kernel_regularizer="l2",
                             bias_constraint=kk.constraints.MaxNorm(2.0)),
    "conv_channels_first": lambda: L.Conv2D(2, 1, data_format="channels_first",
                                            use_bias=False, trainable=False),
    "batch_norm": lambda: L.BatchNormalization(axis=1, momentum=0.9, epsilon=1e-5,
                                               center=False),
    "max_pool": lambda: L.MaxPooling2D((3, 3), strides=(1, 2), padding="same"),
    "avg_pool": lambda: L.AveragePooling2D(2, data_format="channels_first"),
    "dropout": lambda: L.Dropout(0.3, seed=7),
    "flatten": lambda: L.Flatten(),
    "dense": lambda: L.Dense(5, activation="tanh", bias_initializer="ones",
                             activity_regularizer=kk.regularizers.L1L2(0.01, 0.02)),
    "activation": lambda: L.Activation("softmax"),
    "add": lambda: L.Add(name="plus"),
    "subtract": lambda: L.Subtract(),
    "multiply": lambda: L.Multiply(),
    "average": lambda: L.Average(),
    "maximum": lambda: L.Maximum(),
    "minimum": lambda: L.Minimum(),
    "concatenate": lambda: L.Concatenate(axis=1),
    "input": lambda: L.InputLayer(shape=(4, 4, 3), name="pixels"),
}


def _json(config):
    return json.loads(json.dumps(config))


def test_the_table_covers_the_first_layers():
    """The layers kiln had when configs were checked against Keras; a new layer's config
    case belongs in this table too."""
    covered = {type(make()).__name__ for make in LAYERS.values()}
    assert covered >= {"Conv2D", "Dense", "BatchNormalization", "MaxPooling2D",
                       "AveragePooling2D", "Dropout", "Flatten", "Activation", "Add",
                       "Concatenate", "InputLayer"}


@pytest.mark.parametrize("case", sorted(LAYERS))
def test_layer_config_is_keras_config(case):
    keras = keras_oracle.real_keras()
    layer = LAYERS[case]()
    config = _json(layer.get_config())
    theirs = getattr(keras.layers, type(layer).__name__).from_config(config)
    assert _json(theirs.get_config()) == config
    back = type(layer).from_config(_json(theirs.get_config()))
    assert _json(back.get_config()) == config


@pytest.mark.parametrize("name", sorted(models_for_saving.BUILDERS))
def test_model_config_crosses_both_ways(name):
    keras = keras_oracle.real_keras()
    build = models_for_saving.BUILDERS[name]
    ours = build(kk)
    x, _ = models_for_saving.data()
    # kiln's config -> Keras
    config = _json(ours.get_config())
    keras_class = keras.Sequential if isinstance(ours, kk.Sequential) else keras.Model
    theirs = keras_class.from_config(_json(config))  # Keras pops keys off the dict it gets
    assert [layer.name for layer in theirs.layers] == [layer.name for layer in ours.layers]
    assert [w.shape for w in theirs.weights] == [w.shape for w in ours.weights]
    assert [layer.trainable for layer in theirs.layers] == \
        [layer.trainable for layer in ours.layers]
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    # Keras's config -> kiln, and kiln's config -> kiln
    for source in (_json(theirs.get_config()), config):
        clone = type(ours).from_config(source)
        assert [layer.name for layer in clone.layers] == [layer.name for layer in ours.layers]
        assert [layer.trainable for layer in clone.layers] == \
            [layer.trainable for layer in ours.layers]
        clone.set_weights(ours.get_weights())
        np.testing.assert_allclose(clone.predict(x, verbose=0), ours.predict(x, verbose=0),
                                   rtol=1e-6, atol=1e-7)
    assert _json(type(ours).from_config(config).get_config()) == config


def test_functional_config_records_shared_layers_and_several_inputs():
    a, b = kk.Input((4,), name="a"), kk.Input((4,), name="b")
    shared = L.Dense(3, name="shared")
    out = L.Concatenate(name="join")([shared(a), shared(b)])
    model = kk.Model([a, b], [out, L.Dense(1, name="head")(out)])
    config = _json(model.get_config())
    entry = next(layer for layer in config["layers"] if layer["name"] == "shared")
    assert [node["args"][0]["config"]["keras_history"] for node in entry["inbound_nodes"]] == \
        [["a", 0, 0], ["b", 0, 0]]
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    join = next(layer for layer in config["layers"] if layer["name"] == "join")
    assert [t["config"]["keras_history"] for t in join["inbound_nodes"][0]["args"][0]] == \
        [["shared", 0, 0], ["shared", 1, 0]]
    clone = kk.Model.from_config(config)
    clone.set_weights(model.get_weights())
    x = [np.ones((2, 4), "float32"), np.full((2, 4), 2.0, "float32")]
    for mine, theirs in zip(clone.predict(x, verbose=0), model.predict(x, verbose=0),
                            strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)
    keras = keras_oracle.real_keras()
    assert [layer.name for layer in keras.Model.from_config(_json(config)).layers] == \
        [layer.name for layer in model.layers]


def test_keras2_functional_config_with_legacy_nodes():
    """Keras 2 configs: no 'module', nodes as [layer, node, tensor, kwargs] lists, inputs and
    outputs as lists of references."""
    config = {"name": "model", "layers": [
        {"class_name": "InputLayer", "name": "input_1",
         "config": {"batch_input_shape": [None, 4], "dtype": "float32", "sparse": False,
                    "ragged": False, "name": "input_1"}, "inbound_nodes": []},
        {"class_name": "Dense", "name": "dense",
         "config": {"name": "dense", "trainable": True, "dtype": "float32", "units": 2,
                    "activation": "relu", "use_bias": True,
                    "kernel_initializer": {"class_name": "GlorotUniform",
                                           "config": {"seed": None}},
                    "bias_initializer": {"class_name": "Zeros", "config": {}},
                    "kernel_regularizer": None, "bias_regularizer": None,
                    "activity_regularizer": None, "kernel_constraint": None,
                    "bias_constraint": None},
         "inbound_nodes": [[["input_1", 0, 0, {}]]]}],
        "input_layers": [["input_1", 0, 0]], "output_layers": [["dense", 0, 0]]}
    model = kk.Model.from_config(config)
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Dense"]
    assert model.predict(np.ones((3, 4), "float32"), verbose=0).shape == (3, 2)


@pytest.mark.parametrize("bad, message", [
    ({"class_name": "Lambda", "config": {"name": "lam", "function": "x"}}, "Lambda"),
    ({"class_name": "MyLayer", "config": {"name": "mine"}}, "'mine' (class MyLayer)"),
    ({"class_name": "Dense", "config": {"name": "d", "units": -1}}, "units"),
    ({"config": {}}, "class_name"),
])
def test_bad_layer_configs_are_refused_by_name(bad, message):
    config = {"name": "seq", "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [None, 4], "name": "in"}}, bad]}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kk.Sequential.from_config(config)


def test_functional_config_with_a_dangling_call_is_refused():
    model = models_for_saving.resnet_block(kk)
    config = _json(model.get_config())
    config["layers"][3]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = \
        ["nowhere", 0, 0]
    with pytest.raises(ValueError, match="'nowhere'"):
        kk.Model.from_config(config)
    config = _json(model.get_config())
    config["layers"][3]["inbound_nodes"][0]["args"][0]["config"]["keras_history"][1] = 5
    with pytest.raises(ValueError, match="never happen"):
        kk.Model.from_config(config)
