"""Layers' *_initializer arguments against real Keras 3 (JAX backend): each takes a name, a
config dict, an instance, a class and a callable, the weights it makes equal Keras's (with
deterministic initializers), and the layer's get_config writes the initializer as Keras's
does; the default configs of Dense / Conv2D / LSTM / Embedding equal Keras's. Also IRNN's and
net2net's uses (RandomNormal + Identity in a SimpleRNN, an identity Dense) and Keras 2's
`weights=` layer argument."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def three_quarters(shape, dtype=None):
    return np.full(shape, 0.75, dtype or "float32")


IDENTIFIERS = {  # name -> identifier(K)
    "name": lambda K: "ones",
    "dict": lambda K: {"class_name": "Constant", "config": {"value": 0.5}},
    "keras3 dict": lambda K: {"module": "keras.initializers", "class_name": "Constant",
                              "config": {"value": -2.0}, "registered_name": None},
    "instance": lambda K: K.initializers.Constant(0.25),
    "class": lambda K: K.initializers.Ones,
    "function": lambda K: three_quarters,
}

ARGUMENTS = [  # (layer(K, **{argument: initializer}), input shape, argument, weight name)
    (lambda K, **a: K.layers.Dense(3, **a), (4,), "kernel_initializer", "kernel"),
    (lambda K, **a: K.layers.Dense(3, **a), (4,), "bias_initializer", "bias"),
    (lambda K, **a: K.layers.Conv2D(2, 3, **a), (5, 5, 2), "kernel_initializer", "kernel"),
    (lambda K, **a: K.layers.Conv2D(2, 3, data_format="channels_first", **a), (2, 5, 5),
     "bias_initializer", "bias"),
    (lambda K, **a: K.layers.Conv1D(2, 3, **a), (6, 2), "kernel_initializer", "kernel"),
    (lambda K, **a: K.layers.DepthwiseConv2D(3, **a), (5, 5, 2), "depthwise_initializer",
     "kernel"),
    (lambda K, **a: K.layers.SeparableConv2D(2, 3, **a), (5, 5, 2), "pointwise_initializer",
     "pointwise_kernel"),
    (lambda K, **a: K.layers.Conv2DTranspose(2, 3, **a), (4, 4, 2), "kernel_initializer",
     "kernel"),
    (lambda K, **a: K.layers.LSTM(3, **a), (4, 2), "kernel_initializer", "kernel"),
    (lambda K, **a: K.layers.LSTM(3, **a), (4, 2), "recurrent_initializer", "recurrent_kernel"),
    (lambda K, **a: K.layers.GRU(3, **a), (4, 2), "bias_initializer", "bias"),
    (lambda K, **a: K.layers.SimpleRNN(3, **a), (4, 2), "recurrent_initializer",
     "recurrent_kernel"),
    (lambda K, **a: K.layers.Embedding(7, 3, **a), (4,), "embeddings_initializer",
     "embeddings"),
    (lambda K, **a: K.layers.BatchNormalization(**a), (3,), "gamma_initializer", "gamma"),
    (lambda K, **a: K.layers.BatchNormalization(**a), (3,), "moving_variance_initializer",
     "moving_variance"),
    (lambda K, **a: K.layers.LayerNormalization(**a), (3,), "beta_initializer", "beta"),
    (lambda K, **a: K.layers.PReLU(**a), (3,), "alpha_initializer", "alpha"),
]


def built(K, make, shape, argument, identifier):
    made = make(K, **{argument: identifier})
    dtype = "int32" if type(made).__name__ == "Embedding" else "float32"
    K.Sequential([K.Input(shape, dtype=dtype), made])
    return made


def weight(layer, name):
    for variable in layer.weights:
        if variable.path.split("/")[-1] == name:
            return np.asarray(variable.numpy())
    raise AssertionError(f"no weight {name} in {[w.path for w in layer.weights]}")


@pytest.mark.parametrize("kind", sorted(IDENTIFIERS))
@pytest.mark.parametrize("make, shape, argument, name", ARGUMENTS,
                         ids=[f"{index}-{a[2]}" for index, a in enumerate(ARGUMENTS)])
def test_every_initializer_argument_takes_every_form(make, shape, argument, name, kind):
    keras = real_keras()
    ours = built(kk, make, shape, argument, IDENTIFIERS[kind](kk))
    theirs = built(keras, make, shape, argument, IDENTIFIERS[kind](keras))
    np.testing.assert_array_equal(weight(ours, name), weight(theirs, name))
    assert ours.get_config()[argument] == theirs.get_config()[argument]


@pytest.mark.parametrize("layer", ["Dense(2)", "Conv2D(2, 3)", "LSTM(2)", "Embedding(3, 2)",
                                   "Conv1D(2, 3, kernel_initializer='he_normal')",
                                   "GRU(2, recurrent_initializer='glorot_normal')"])
def test_default_configs_equal_keras(layer):
    keras = real_keras()  # noqa: F841  (read by the eval below)
    ours, theirs = eval(f"kk.layers.{layer}").get_config(), eval(f"keras.layers.{layer}")
    theirs = theirs.get_config()
    keys = [key for key in theirs if key.endswith("_initializer")]
    assert keys and {key: ours[key] for key in keys} == {key: theirs[key] for key in keys}
    again = type(eval(f"kk.layers.{layer}")).from_config(theirs)  # Keras's config loads here
    assert {key: again.get_config()[key] for key in keys} == {key: theirs[key] for key in keys}


def test_layers_made_from_one_config_draw_new_weights():
    """A layer's config keeps seed None, so two layers made from it (or a Bidirectional's two
    directions) start from different weights, as in Keras; a seed repeats them."""
    config = kk.layers.Dense(4).get_config()
    first, second = kk.layers.Dense.from_config(config), kk.layers.Dense.from_config(config)
    for layer in (first, second):
        kk.Sequential([kk.Input((3,)), layer])
    assert not np.array_equal(first.get_weights()[0], second.get_weights()[0])
    seeded = kk.layers.Dense(4, kernel_initializer=kk.initializers.GlorotUniform(seed=3))
    copy = kk.layers.Dense.from_config(seeded.get_config())
    for layer in (seeded, copy):
        kk.Sequential([kk.Input((3,)), layer])
    np.testing.assert_array_equal(seeded.get_weights()[0], copy.get_weights()[0])
    both = kk.layers.Bidirectional(kk.layers.LSTM(3))
    kk.Sequential([kk.Input((4, 2)), both])
    assert not np.array_equal(both.forward_layer.get_weights()[0],
                              both.backward_layer.get_weights()[0])


def test_multi_head_attention_projections_start_apart():
    """Keras gives each projection a copy of the initializer: query and key kernels differ."""
    layer = kk.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    inputs = kk.Input((4, 6))
    kk.Model(inputs, layer(inputs, inputs))
    query, key = layer.query_dense.get_weights()[0], layer.key_dense.get_weights()[0]
    assert query.shape == key.shape and not np.array_equal(query, key)


def test_irnn_layer_keeps_its_initializers_in_its_config():
    """mnist_irnn.py's SimpleRNN: the weights are drawn by the classes, and the config equals
    Keras 3's for the initializer keys (and loads back)."""
    keras = real_keras()

    def layer(K):
        return K.layers.SimpleRNN(
            100, kernel_initializer=K.initializers.RandomNormal(stddev=0.001),
            recurrent_initializer=K.initializers.Identity(gain=1.0), activation="relu")

    ours, theirs = layer(kk), layer(keras)
    kk.Sequential([kk.Input((784, 1)), ours])
    kernel, recurrent, bias = ours.get_weights()
    assert kernel.shape == (1, 100) and kernel.std() == pytest.approx(0.001, rel=0.3)
    np.testing.assert_array_equal(recurrent, np.eye(100, dtype=np.float32))
    assert not bias.any()
    config, keras_config = ours.get_config(), theirs.get_config()
    for key in ("kernel_initializer", "recurrent_initializer", "bias_initializer"):
        assert config[key] == keras_config[key]
    again = kk.layers.SimpleRNN.from_config(keras_config)
    assert again.get_config()["kernel_initializer"] == keras_config["kernel_initializer"]


def test_dense_identity_kernel_is_net2deeper():
    dense = kk.layers.Dense(4, kernel_initializer="identity", activation="relu")
    kk.Sequential([kk.Input((4,)), dense])
    np.testing.assert_array_equal(dense.get_weights()[0], np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match=r"Identity.*2D.*rank 4"):
        kk.Sequential([kk.Input((5, 5, 2)), kk.layers.Conv2D(2, 3, kernel_initializer="identity")])


def test_keras2_weights_argument_sets_the_initial_weights():
    """Keras 2's `Conv2D(..., weights=[kernel, bias])` (mnist_net2net.py's deeper student):
    set once the layer has built its weights, in a Sequential as in a functional model."""
    rng = np.random.default_rng(0)
    kernel, bias = rng.normal(size=(3, 3, 2, 4)).astype(np.float32), np.arange(4.0)
    conv = kk.layers.Conv2D(4, 3, padding="same", weights=[kernel, bias], name="c")
    model = kk.Sequential([kk.Input((5, 5, 2)), conv])
    got_kernel, got_bias = conv.get_weights()
    np.testing.assert_array_equal(got_kernel, kernel)
    np.testing.assert_array_equal(got_bias, bias)
    x = rng.normal(size=(1, 5, 5, 2)).astype(np.float32)
    center = model.predict(x, verbose=0)[0, 2, 2]
    expected = np.einsum("hwc,hwco->o", x[0, 1:4, 1:4], kernel) + bias
    np.testing.assert_allclose(center, expected, rtol=1e-5, atol=1e-5)

    inputs = kk.Input((3,))
    dense = kk.layers.Dense(2, weights=[np.ones((3, 2)), np.zeros(2)])
    kk.Model(inputs, dense(inputs))
    np.testing.assert_array_equal(dense.get_weights()[0], np.ones((3, 2)))

    with pytest.raises(ValueError, match=r"Dense 'bad'.*expected 2 weight arrays"):
        bad = kk.layers.Dense(2, weights=[np.ones((3, 2))], name="bad")
        kk.Sequential([kk.Input((3,)), bad])
