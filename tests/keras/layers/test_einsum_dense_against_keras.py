"""EinsumDense against real Keras 3 (JAX backend): kernel and bias shapes as Keras computes
them from the equation, predictions and training steps from the same weights, get_config and
a .keras round trip, and the errors for equations and inputs that do not fit."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

# (equation, output_shape, bias_axes, input shape without the batch)
CASES = [
    ("ab,bc->ac", 4, "c", (6,)),
    ("abc,cd->abd", (5, 4), "d", (5, 3)),
    ("abc,cde->abde", (None, 2, 3), "de", (5, 4)),       # MHA's projections
    ("abcd,cde->abe", (None, 6), "e", (5, 2, 3)),        # MHA's output projection
    ("...b,bc->...c", 4, None, (5, 3)),
    ("abc,cde->abde", (5, 2, 3), "e", (5, 4)),           # a bias over the last axis only
]


@pytest.mark.parametrize("equation, output_shape, bias_axes, shape", CASES)
def test_weight_shapes_as_keras(equation, output_shape, bias_axes, shape):
    keras = real_keras()
    for module in (kk, keras):
        layer = module.layers.EinsumDense(equation, output_shape, bias_axes=bias_axes,
                                          name="proj")
        layer.build((None, *shape))
        if module is kk:
            kiln_weights = [(w.path, tuple(w.shape)) for w in layer.weights]
            kiln_out = layer.compute_output_shape((None, *shape))
        else:
            assert kiln_weights == [(w.path, tuple(w.shape)) for w in layer.weights]
            assert tuple(kiln_out) == tuple(layer.compute_output_shape((None, *shape)))


def _projection_model(equation, output_shape, bias_axes, shape, activation=None):
    def build(K):
        inputs = K.Input(shape)
        x = K.layers.EinsumDense(equation, output_shape, bias_axes=bias_axes,
                                 activation=activation)(inputs)
        x = K.layers.Flatten()(x) if len(x.shape) > 2 else x
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))

    return build


@pytest.mark.parametrize("equation, output_shape, bias_axes, shape", [
    ("abc,cd->abd", (5, 4), "d", (5, 3)),
    ("abc,cde->abde", (5, 2, 3), "de", (5, 4)),
    ("abcd,cde->abe", (5, 6), "e", (5, 2, 3))])
def test_predict_and_train_as_keras(equation, output_shape, bias_axes, shape):
    check_against_keras(_projection_model(equation, output_shape, bias_axes, shape, "tanh"),
                        optimizers=("sgd", "adam"), steps=1)


def test_config_round_trip_and_keras_file(tmp_path):
    layer = kk.layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de",
                                  activation="relu", name="proj")
    config = layer.get_config()
    keras = real_keras()
    expected = keras.layers.EinsumDense("abc,cde->abde", (None, 2, 3), bias_axes="de",
                                        activation="relu", name="proj").get_config()
    assert sorted(config) == sorted(expected)
    for key in ("output_shape", "equation", "activation", "bias_axes"):
        assert config[key] == expected[key], key
    again = kk.layers.EinsumDense.from_config(config)
    assert again.get_config() == config

    build = _projection_model("abc,cde->abde", (5, 2, 3), "de", (5, 4))
    model = build(kk)
    x = np.random.default_rng(0).standard_normal((4, 5, 4)).astype(np.float32)
    path = str(tmp_path / "einsum.keras")
    model.save(path)
    loaded = kk.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_bad_arguments_name_the_layer_and_the_argument():
    with pytest.raises(ValueError, match="EinsumDense 'e'.*output_shape"):
        kk.layers.EinsumDense("ab,bc->ac", "four", name="e")
    with pytest.raises(ValueError, match="EinsumDense 'e'.*bias_axes.*'z'"):
        kk.layers.EinsumDense("ab,bc->ac", 4, bias_axes="z", name="e").build((None, 3))
    with pytest.raises(ValueError, match="EinsumDense 'e'.*names 3 input axes.*has 2"):
        kk.layers.EinsumDense("abc,cd->abd", (5, 4), name="e").build((None, 3))
    with pytest.raises(NotImplementedError, match="EinsumDense 'e'.*'abc,db->adc'"):
        kk.layers.EinsumDense("abc,db->adc", (4, 5), name="e").build((None, 3, 5))
