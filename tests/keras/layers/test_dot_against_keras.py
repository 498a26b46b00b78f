"""keras.layers.Dot (and Keras 2's keras.layers.merge.Dot / dot) against Keras 3: the per-sample
dot product of two (batch, n) or two (batch, steps, n) tensors along one axis each, with and
without L2 normalization; predictions and training steps from the same weights."""

import pytest
from keras_oracle import check_against_keras

from kiln import keras as kk
from kiln.keras.layers import merge


def features(K, normalize):
    a, b = K.Input((5,)), K.Input((5,))
    x, y = K.layers.Dense(4)(a), K.layers.Dense(4)(b)
    out = K.layers.Dot(axes=1, normalize=normalize)([x, y])
    return K.Model([a, b], K.layers.Dense(3, activation="softmax")(out))


def sequences(K, axes, normalize):
    """(batch, 4, 3) . (batch, 6, 3) over the features (axes 2 / -1), or
    (batch, 4, 3) . (batch, 4, 2) over the steps (axes 1)."""
    over_features = axes in (2, -1, (2, 2))
    a, b = K.Input((4, 3)), K.Input((6, 3) if over_features else (4, 2))
    x, y = K.layers.Dense(3)(a), K.layers.Dense(3 if over_features else 2)(b)
    out = K.layers.Dot(axes=axes, normalize=normalize)([x, y])
    return K.Model([a, b], K.layers.Dense(3, activation="softmax")(K.layers.Flatten()(out)))


@pytest.mark.parametrize("normalize", [False, True])
def test_dot_of_feature_vectors(normalize):
    check_against_keras(lambda K: features(K, normalize), optimizers=("adam",))


@pytest.mark.parametrize("axes, normalize", [(2, False), ((2, 2), True), (1, False),
                                             (-1, False)])
def test_dot_of_sequences(axes, normalize):
    check_against_keras(lambda K: sequences(K, axes, normalize), optimizers=("sgd",))


def test_keras2_merge_path_and_functional_form():
    assert merge.Dot is kk.layers.Dot and merge.dot is kk.layers.dot
    a, b = kk.Input((4,)), kk.Input((4,))
    layer_output = kk.layers.dot([a, b], axes=-1, normalize=True)
    assert tuple(layer_output.shape) == (None, 1)
    layer = kk.layers.Dot(axes=(1, 2), normalize=True, name="d")
    config = layer.get_config()
    assert config["axes"] == (1, 2) and config["normalize"] is True
    assert kk.layers.Dot.from_config(config).axes == (1, 2)


@pytest.mark.parametrize("make, inputs, error, pattern", [
    (lambda: kk.layers.Dot(axes="x", name="d"), None, ValueError, r"Dot 'd'.*axes"),
    (lambda: kk.layers.Dot(axes=1, name="d"), ((4,), (5,)), ValueError,
     r"Dot 'd'.*incompatible.*4.*5"),
    (lambda: kk.layers.Dot(axes=(0, 1), name="d"), ((4,), (4,)), ValueError,
     r"Dot 'd'.*batch axis"),
    (lambda: kk.layers.Dot(axes=1, name="d"), ((4,), (2, 4)), NotImplementedError,
     r"Dot 'd'.*ranks 2 and 3"),
])
def test_bad_arguments_name_the_layer(make, inputs, error, pattern):
    with pytest.raises(error, match=pattern):
        layer = make()
        layer([kk.Input(inputs[0]), kk.Input(inputs[1])])
