"""keras.initializers classes (RandomNormal(stddev=0.001), Identity(gain=1.0), VarianceScaling
and friends), as mnist_irnn.py and mnist_net2net.py use them: the values follow Keras 3's rules,
configs equal Keras 3's both ways, a layer built with one keeps it in its config, and Keras 2's
`weights=` layer argument sets the initial weights."""

import numpy as np
import pytest
from keras_oracle import real_keras

from kiln import keras as kk
from kiln.keras import initializers

SHAPE = (300, 200)


@pytest.mark.parametrize("make, name", [
    (lambda inits: inits.RandomNormal(stddev=0.001), "RandomNormal"),
    (lambda inits: inits.RandomUniform(minval=-0.2, maxval=0.1, seed=3), "RandomUniform"),
    (lambda inits: inits.TruncatedNormal(mean=1.0, stddev=0.5), "TruncatedNormal"),
    (lambda inits: inits.VarianceScaling(scale=2.0, mode="fan_out", distribution="uniform"),
     "VarianceScaling"),
    (lambda inits: inits.VarianceScaling(distribution="normal"), "VarianceScaling"),
    (lambda inits: inits.GlorotUniform(seed=1), "GlorotUniform"),
    (lambda inits: inits.LecunNormal(), "LecunNormal"),
    (lambda inits: inits.HeUniform(), "HeUniform"),
    (lambda inits: inits.Orthogonal(gain=2.0), "Orthogonal"),
    (lambda inits: inits.Constant(3.0), "Constant"),
    (lambda inits: inits.Zeros(), "Zeros"),
])
def test_configs_equal_keras(make, name):
    keras = real_keras()
    ours = initializers.serialize(make(initializers))
    theirs = keras.saving.serialize_keras_object(make(keras.initializers))
    assert ours == theirs
    assert ours["class_name"] == name
    # and back: Keras's config gives the same initializer
    again = initializers.get(theirs, "Dense 'd'", "kernel_initializer")
    assert initializers.serialize(again) == ours


def test_identity_keeps_its_gain_and_refuses_other_ranks():
    keras = real_keras()
    identity = initializers.Identity(gain=2.0)
    np.testing.assert_array_equal(identity((3, 4)), 2.0 * np.eye(3, 4, dtype=np.float32))
    np.testing.assert_array_equal(identity((3, 4)), keras.initializers.Identity(2.0)((3, 4)))
    config = initializers.serialize(identity)
    assert config["class_name"] == "Identity" and config["config"] == {"gain": 2.0}
    # Keras 3 writes {} (losing the gain); both load in Keras and here
    assert keras.initializers.Identity.from_config(config["config"]).gain == 2.0
    assert initializers.get({"class_name": "Identity", "config": {}}, "d")((2, 2))[0, 0] == 1.0
    assert initializers.get("identity", "d")((2, 2))[1, 1] == 1.0
    with pytest.raises(ValueError, match=r"Identity.*2D.*\(3, 3, 2\)"):
        identity((3, 3, 2))


def variance_of_keras_rule(scale, fan):
    return scale / max(1.0, fan)


@pytest.mark.parametrize("make, variance", [
    (lambda: initializers.RandomNormal(stddev=0.001), 0.001 ** 2),
    (lambda: initializers.RandomUniform(minval=-0.3, maxval=0.3), 0.3 ** 2 / 3),
    # a normal cut at 2 sigma keeps 0.774 of its variance (not rescaled)
    (lambda: initializers.TruncatedNormal(stddev=0.5), 0.25 * 0.7737),
    (lambda: initializers.VarianceScaling(2.0, "fan_out", "uniform"),
     variance_of_keras_rule(2.0, 200)),
    (lambda: initializers.VarianceScaling(1.0, "fan_avg", "untruncated_normal"),
     variance_of_keras_rule(1.0, 250)),
    (lambda: initializers.LecunNormal(), variance_of_keras_rule(1.0, 300)),
    (lambda: initializers.HeUniform(), variance_of_keras_rule(2.0, 300)),
    (lambda: initializers.GlorotNormal(), variance_of_keras_rule(1.0, 250)),
])
def test_variances_follow_keras_rules(make, variance):
    values = make()(SHAPE)
    assert values.dtype == np.float32 and values.shape == SHAPE
    assert values.var() == pytest.approx(variance, rel=0.03)
    assert abs(values.mean()) < 0.01 * np.sqrt(variance) * 10


def test_truncated_normal_stays_within_two_deviations_of_its_mean():
    values = initializers.TruncatedNormal(mean=1.0, stddev=0.5)(SHAPE)
    assert values.min() >= 0.0 and values.max() <= 2.0
    assert values.mean() == pytest.approx(1.0, abs=0.01)


def test_a_seed_repeats_the_values_and_no_seed_draws_new_ones():
    seeded = initializers.RandomNormal(seed=7)
    np.testing.assert_array_equal(seeded((4, 5)), seeded((4, 5)))
    plain = initializers.RandomNormal()
    assert not np.array_equal(plain((4, 5)), plain((4, 5)))


@pytest.mark.parametrize("make, pattern", [
    (lambda: initializers.VarianceScaling(mode="fan_sum"), r"VarianceScaling.*mode.*fan_sum"),
    (lambda: initializers.VarianceScaling(scale=0), r"VarianceScaling.*scale.*positive"),
    (lambda: initializers.RandomNormal()((2,), dtype="float16"), r"RandomNormal.*dtype"),
    (lambda: initializers.get({"class_name": "VarianceScaling", "config": {"mode": "x"}},
                              "Dense 'd'", "kernel_initializer"),
     r"Dense 'd'.*kernel_initializer.*VarianceScaling.*mode"),
    (lambda: kk.layers.Dense(2, kernel_initializer="stft", name="d"),
     r"Dense 'd'.*kernel_initializer.*'stft'"),
])
def test_bad_arguments_name_the_initializer_and_argument(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


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
    assert config["kernel_initializer"] == keras_config["kernel_initializer"]
    assert config["recurrent_initializer"]["class_name"] == "Identity"
    again = kk.layers.SimpleRNN.from_config(keras_config)
    assert again.get_config()["kernel_initializer"] == keras_config["kernel_initializer"]


def test_dense_identity_kernel_is_net2deeper():
    dense = kk.layers.Dense(4, kernel_initializer="identity", activation="relu")
    kk.Sequential([kk.Input((4,)), dense])
    np.testing.assert_array_equal(dense.get_weights()[0], np.eye(4, dtype=np.float32))


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
