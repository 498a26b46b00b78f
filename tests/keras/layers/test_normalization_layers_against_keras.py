"""LayerNormalization, RMSNormalization, UnitNormalization and GroupNormalization against real
Keras 3 (JAX): predict and one training step from the same weights, on inputs of rank 2, 3 and
4 with the argument combinations of each path (oneDNN layer normalization over trailing axes,
numba kernels for the others); config round trips, files, bad arguments.

To keep the XLA compilations few, each model stacks several normalization layers: one wrong
value or gradient in any of them changes the prediction or the weights after the step.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
from keras_oracle import check_against_keras, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [pytest.mark.usefixtures("kiln_keras_env"),
              # both sides warn that Keras's rms_scaling is deprecated
              pytest.mark.filterwarnings("ignore:You passed `rms_scaling=True`")]

RANDOM = {"gamma_initializer": "random_uniform", "beta_initializer": "random_normal"}


def head(K, x):
    return K.layers.Dense(3, activation="softmax")(K.layers.Flatten()(x))


def rank2(K):
    x = K.Input((6,))
    y = K.layers.Dense(6)(x)
    y = K.layers.LayerNormalization(center=False, gamma_initializer="random_uniform")(y)
    y = K.layers.LayerNormalization(scale=False, beta_initializer="random_normal")(y)
    y = K.layers.LayerNormalization(trainable=False, **RANDOM)(y)  # frozen: no weight moves
    y = K.layers.GroupNormalization(groups=3, **RANDOM)(y)
    y = K.layers.GroupNormalization(groups=2, trainable=False, **RANDOM)(y)
    y = K.layers.RMSNormalization()(y)
    y = K.layers.UnitNormalization()(y)
    return K.Model(x, head(K, y))


def rank3(K):
    x = K.Input((6, 8))
    y = K.layers.Dense(8)(x)
    y = K.layers.LayerNormalization(**RANDOM)(y)               # oneDNN, the transformer case
    y = K.layers.LayerNormalization(axis=1, **RANDOM)(y)       # numba: a middle axis
    y = K.layers.LayerNormalization(axis=[1, 2], **RANDOM)(y)  # oneDNN: two trailing axes
    y = K.layers.LayerNormalization(rms_scaling=True, gamma_initializer="random_uniform")(y)
    y = K.layers.GroupNormalization(groups=4, **RANDOM)(y)
    y = K.layers.GroupNormalization(groups=3, axis=1, **RANDOM)(y)
    y = K.layers.RMSNormalization(axis=[1, 2])(y)  # Keras broadcasts scale only so
    y = K.layers.UnitNormalization(axis=[1, 2])(y)
    return K.Model(x, head(K, y))


def rank4(K):
    x = K.Input((4, 4, 2))
    y = K.layers.Conv2D(4, 3, padding="same")(x)
    y = K.layers.LayerNormalization(**RANDOM)(y)
    y = K.layers.LayerNormalization(axis=[1, 2], **RANDOM)(y)
    y = K.layers.LayerNormalization(axis=[-3, -2, -1], **RANDOM)(y)
    y = K.layers.GroupNormalization(groups=2, **RANDOM)(y)
    y = K.layers.GroupNormalization(groups=-1, **RANDOM)(y)
    y = K.layers.RMSNormalization(axis=-1)(y)
    y = K.layers.UnitNormalization(axis=-1)(y)
    return K.Model(x, head(K, y))


def transformer_block(K):
    """Input((8, 16)) -> Dense(16) -> LayerNormalization -> residual Add ->
    LayerNormalization -> GlobalAveragePooling1D -> Dense."""
    x = K.Input((8, 16))
    y = K.layers.LayerNormalization(**RANDOM)(K.layers.Dense(16)(x))
    y = K.layers.LayerNormalization(**RANDOM)(K.layers.Add()([x, y]))
    y = K.layers.GlobalAveragePooling1D()(y)
    return K.Model(x, K.layers.Dense(3, activation="softmax")(y))


@pytest.mark.parametrize("build", [rank2, rank3, rank4], ids=["rank2", "rank3", "rank4"])
def test_normalization_layers_against_keras(build):
    check_against_keras(build, optimizers=["sgd"], steps=1)


def test_transformer_block_trains_as_keras():
    check_against_keras(transformer_block, optimizers=["sgd", "adam"], steps=2)


LAYERS = [
    ("LayerNormalization", {"axis": [2, 1], "epsilon": 1e-5, "center": False,
                            "gamma_regularizer": "l2", "beta_constraint": "non_neg"}),
    ("LayerNormalization", {"rms_scaling": True}),
    ("RMSNormalization", {"axis": -1, "epsilon": 1e-4}),
    ("UnitNormalization", {"axis": [1, 2]}),
    ("GroupNormalization", {"groups": -1, "axis": -1, "scale": False}),
]


@pytest.mark.parametrize("kind, arguments", LAYERS, ids=[kind for kind, _ in LAYERS])
def test_weights_and_config_as_keras(kind, arguments):
    keras = real_keras()
    ours = getattr(kk.layers, kind)(name="norm", **arguments)
    theirs = getattr(keras.layers, kind)(name="norm", **arguments)
    ours(kk.Input((4, 6)))
    theirs(keras.Input((4, 6)))
    assert ours.get_config() == theirs.get_config()
    assert [(w.name, w.shape) for w in ours.weights] == [
        (w.name, tuple(w.shape)) for w in theirs.weights]
    clone = type(ours).from_config(ours.get_config())
    clone(kk.Input((4, 6)))
    assert clone.get_config() == ours.get_config()


# Keras 3 cannot read back its own .h5 file of a LayerNormalization over two axes (its legacy
# loader builds gamma of shape (8,) for axis [1, 2]): the .h5 case is the transformer block.
@pytest.mark.parametrize("build, shape, suffix", [(rank3, (6, 8), ".keras"),
                                                  (transformer_block, (8, 16), ".h5")])
def test_saved_and_loaded_in_both_directions(tmp_path, build, shape, suffix):
    keras = real_keras()
    model = build(kk)
    x = np.random.default_rng(0).normal(size=(3, *shape)).astype(np.float32)
    expected = model.predict(x)
    model.save(tmp_path / f"kiln{suffix}")
    np.testing.assert_array_equal(kk.models.load_model(tmp_path / f"kiln{suffix}").predict(x),
                                  expected)
    by_keras = keras.models.load_model(tmp_path / f"kiln{suffix}")
    np.testing.assert_allclose(by_keras.predict(x, verbose=0), expected, rtol=1e-4, atol=1e-5)
    by_keras.save(tmp_path / f"keras{suffix}")
    from_keras = kk.models.load_model(tmp_path / f"keras{suffix}")
    np.testing.assert_allclose(from_keras.predict(x), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make, shape, message", [
    (lambda: kk.layers.LayerNormalization(axis=3, name="bad"), (4, 6),
     r"LayerNormalization 'bad': argument axis must name axes .* got 3"),
    (lambda: kk.layers.LayerNormalization(axis=0, name="bad"), (4, 6),
     r"LayerNormalization 'bad': argument axis .* other than the batch axis"),
    (lambda: kk.layers.LayerNormalization(axis=[1, 3], name="bad"), (4, 5, 6),
     r"LayerNormalization 'bad': argument axis must list consecutive axes"),
    (lambda: kk.layers.RMSNormalization(axis=-4, name="bad"), (4, 6),
     r"RMSNormalization 'bad': argument axis must name axes"),
    (lambda: kk.layers.UnitNormalization(axis=5, name="bad"), (4, 6),
     r"UnitNormalization 'bad': argument axis must name axes"),
    (lambda: kk.layers.GroupNormalization(groups=4, name="bad"), (4, 6),
     r"GroupNormalization 'bad': argument groups must divide the 6 channels .* got 4"),
    (lambda: kk.layers.GroupNormalization(name="bad"), (4, 6),
     r"GroupNormalization 'bad': argument groups must divide the 6 channels .* got 32"),
])
def test_bad_axes_and_groups_name_the_layer_and_the_argument(make, shape, message):
    with pytest.raises(ValueError, match=message):
        make()(kk.Input(shape))


@pytest.mark.parametrize("make, message", [
    (lambda: kk.layers.GroupNormalization(groups=0, name="bad"), "argument groups"),
    (lambda: kk.layers.LayerNormalization(axis="last", name="bad"), "argument axis"),
    (lambda: kk.layers.LayerNormalization(epsilon=-1.0, name="bad"), "argument epsilon"),
])
def test_bad_constructor_arguments(make, message):
    with pytest.raises(ValueError, match=f"'bad': {message}"):
        make()


def test_the_mask_rides_through_layer_normalization():
    """Keras's LayerNormalization passes its input's mask on (to the LSTM here)."""
    ids = np.array([[1, 2, 0, 0], [3, 1, 2, 0], [2, 2, 2, 1]], np.int32)

    def build(K):
        x = K.Input((4,), dtype="int32")
        y = K.layers.Embedding(5, 6, mask_zero=True)(x)
        y = K.layers.LayerNormalization(gamma_initializer="random_uniform")(y)
        return K.Model(x, K.layers.Dense(3, activation="softmax")(K.layers.LSTM(3)(y)))

    check_against_keras(build, optimizers=["sgd"], steps=1, inputs=ids)
