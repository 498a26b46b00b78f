"""DenseNet, Xception, InceptionV3 and ConvNeXt beyond the comparisons with Keras's models:
the variants not compared there against a record of Keras's structure, Keras's LayerScale and
StochasticDepth (configs both ways, the per-sample drop), `weights="imagenet"` from the Keras
cache (a Keras 2 `.h5` as Keras publishes them, through ConvNeXt's nested Sequentials), and
Keras's errors for bad arguments."""

import hashlib
import os

import numpy as np
import pytest
from applications_helpers import images
from test_applications_weights_and_utils import keras_models_dir, save_keras2_h5

from kiln import keras as kk
from kiln.keras.applications.convnext import LayerScale, StochasticDepth

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

# Keras 3.15's models, include_top=False on (32, 32, 3): (layers, weights, parameters, the
# first 16 hex digits of the sha256 of "layer/weight:shape" of every weight in order, joined
# by "|"). The last two parts of the paths: Keras prefixes the weights of ConvNeXt's nested
# Sequentials with the Sequential's name, kiln does not (a known difference of nested models,
# see keras_oracle's _path_matches; the weights files do not depend on it).
# ConvNeXtLarge (259 layers, 342 weights, 196230336 parameters) and ConvNeXtXLarge (259, 342,
# 348147968) are the same code with wider stages; too big to build here.
KERAS_STRUCTURE = {
    "DenseNet121": (427, 604, 7037504, "b9d04e4721c8b32f"),
    "DenseNet169": (595, 844, 12642880, "5b0de060c3d5fc64"),
    "DenseNet201": (707, 1004, 18321984, "262733db30112097"),
    "ConvNeXtSmall": (259, 342, 49454688, "9aabb6fdfa5ac1eb"),
    "ConvNeXtBase": (259, 342, 87566464, "44c5e1b2a347a4af"),
}


@pytest.mark.parametrize("name", list(KERAS_STRUCTURE))
def test_other_variants_have_keras_structure(name):
    kk.backend.clear_session(free_memory=False)  # automatic names as recorded
    model = getattr(kk.applications, name)(include_top=False, weights=None,
                                           input_shape=(32, 32, 3))
    description = "|".join(f"{'/'.join(w.path.split('/')[-2:])}:{tuple(w.shape)}"
                           for w in model.weights)
    digest = hashlib.sha256(description.encode()).hexdigest()[:16]
    assert (len(model.layers), len(model.weights), model.count_params(), digest) == (
        KERAS_STRUCTURE[name])


def layer_scale_model(K, LayerScaleClass, StochasticDepthClass):  # noqa: N803
    inputs = K.Input((4, 4, 3))
    x = K.layers.Conv2D(3, 3, padding="same", name="conv")(inputs)
    x = LayerScaleClass(0.5, 3, name="scale")(x)
    x = StochasticDepthClass(0.2, name="drop")(x)
    # (ConvNeXt's own `inputs + x` is an op between layers: kiln cannot save those yet)
    return K.Model(inputs, K.layers.Add(name="add")([inputs, x]))


def test_layer_scale_and_stochastic_depth_files_load_both_ways(fast_keras_init, tmp_path):
    keras = fast_keras_init
    from keras.src.applications import convnext

    x = images(2, 4)
    ours = layer_scale_model(kk, LayerScale, StochasticDepth)
    ours.get_layer("scale").set_weights([np.array([0.5, 2.0, -1.0], np.float32)])
    ours.save(tmp_path / "kiln.keras")
    theirs = keras.saving.load_model(tmp_path / "kiln.keras")
    assert [type(layer).__name__ for layer in theirs.layers[2:4]] == ["LayerScale",
                                                                      "StochasticDepth"]
    assert theirs.get_layer("drop").get_config()["drop_path_rate"] == 0.2
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x), rtol=1e-5,
                               atol=1e-4)

    source = layer_scale_model(keras, convnext.LayerScale, convnext.StochasticDepth)
    source.save(tmp_path / "keras.keras")
    loaded = kk.models.load_model(tmp_path / "keras.keras")
    assert isinstance(loaded.get_layer("scale"), LayerScale)
    assert loaded.get_layer("scale").get_config() == source.get_layer("scale").get_config()
    np.testing.assert_allclose(loaded.predict(x), source.predict(x, verbose=0), rtol=1e-5,
                               atol=1e-4)


def test_stochastic_depth_drops_whole_samples_in_training_only():
    inputs = kk.Input((2, 2, 3))
    model = kk.Model(inputs, StochasticDepth(0.25, name="drop")(inputs))
    x = np.ones((2000, 2, 2, 3), np.float32)
    y = np.asarray(model(x, training=True))
    per_sample = y.reshape(len(y), -1)
    assert (per_sample == per_sample[:, :1]).all()  # one draw per sample
    np.testing.assert_allclose(np.unique(per_sample), [0.0, 1 / 0.75], rtol=1e-6)
    dropped = float((per_sample[:, 0] == 0).mean())
    assert abs(dropped - 0.25) < 4 * np.sqrt(0.25 * 0.75 / len(x))
    np.testing.assert_array_equal(model.predict(x[:4]), x[:4])


def test_convnext_imagenet_weights_come_from_the_keras_cache(fast_keras_init):
    # a Keras 2 .h5 loads in layer order, the stem and downsampling Sequentials included
    keras = fast_keras_init
    keras_model = keras.applications.ConvNeXtTiny(include_top=False, weights=None,
                                                  input_shape=(32, 32, 3))
    save_keras2_h5(keras_model, os.path.join(keras_models_dir(), "convnext_tiny_notop.h5"))
    model = kk.applications.ConvNeXtTiny(include_top=False, weights="imagenet",
                                         input_shape=(32, 32, 3))
    for weight, value, expected in zip(model.weights, model.get_weights(),
                                       keras_model.get_weights(), strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=weight.path)


@pytest.mark.parametrize("build, file_name", [
    (lambda: kk.applications.Xception(include_top=False, weights="imagenet"),
     "xception_weights_tf_dim_ordering_tf_kernels_notop.h5"),
    (lambda: kk.applications.DenseNet121(weights="imagenet"),
     "densenet121_weights_tf_dim_ordering_tf_kernels.h5"),
])
def test_a_missing_imagenet_file_says_where_to_put_it(build, file_name):
    with pytest.raises(FileNotFoundError) as error:
        build()
    message = str(error.value)
    assert file_name in message and keras_models_dir() in message
    assert "downloads nothing" in message


@pytest.mark.parametrize("build, message", [
    (lambda: kk.applications.Xception(weights=None, include_top=False,
                                      input_shape=(70, 70, 3)), "at least 71x71"),
    (lambda: kk.applications.InceptionV3(weights=None, include_top=False,
                                         input_shape=(74, 74, 3)), "at least 75x75"),
    (lambda: kk.applications.DenseNet169(weights=None, include_top=False,
                                         input_shape=(31, 31, 3)), "at least 32x32"),
    (lambda: kk.applications.InceptionV3(weights="imagenet", classes=10),
     "classes should be 1000"),
    (lambda: kk.applications.Xception(weights="imagenet", input_shape=(200, 200, 3)),
     r"input_shape should be \(299, 299, 3\)"),
    (lambda: kk.applications.ConvNeXtTiny(weights="imagenet", name="mine"),
     'must contain the weights variant "convnext_tiny"'),
    (lambda: kk.applications.ConvNeXtSmall(weights="imagenet", classifier_activation="relu"),
     "Only None and 'softmax'"),
    (lambda: kk.applications.DenseNet121(weights="nowhere.h5"), "the weights argument"),
])
def test_bad_arguments_are_clear(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("build", [kk.applications.DenseNet121, kk.applications.ConvNeXtTiny])
def test_channels_first_is_refused_as_keras_does(build):
    kk.backend.set_image_data_format("channels_first")
    with pytest.raises(ValueError, match="does not support the 'channels_first'"):
        build(weights=None)


def test_layer_scale_checks_its_arguments():
    with pytest.raises(ValueError, match="LayerScale 'ls'.*projection_dim=4 must equal"):
        LayerScale(0.1, 4, name="ls")(kk.Input((2, 2, 3)))
    with pytest.raises(ValueError, match="StochasticDepth 'sd'.*drop_path_rate"):
        StochasticDepth(1.5, name="sd")


def test_module_preprocessing_modes():
    x = np.full((1, 2, 2, 3), 255.0, np.float32)
    assert np.allclose(kk.applications.xception.preprocess_input(x.copy()), 1.0)
    assert np.allclose(kk.applications.inception_v3.preprocess_input(x.copy()), 1.0)
    expected = (1.0 - np.array([0.485, 0.456, 0.406])) / np.array([0.229, 0.224, 0.225])
    np.testing.assert_allclose(kk.applications.densenet.preprocess_input(x.copy())[0, 0, 0],
                               expected, rtol=1e-6)
    assert kk.applications.convnext.preprocess_input(x) is x


def test_convnext_is_a_frozen_base_called_as_a_layer():
    """The transfer-learning form: ConvNeXt's residual `inputs + x` (a keras.op between layers)
    is replayed when the model is called as a layer; the nested call predicts what the base
    does, and fit moves the head only."""
    base = kk.applications.convnext.ConvNeXt([1, 1, 1, 1], [8, 16, 24, 32],
                                             layer_scale_init_value=0.1, weights=None,
                                             include_top=False, input_shape=(32, 32, 3))
    base.trainable = False
    inputs = kk.Input((32, 32, 3))
    features = base(inputs, training=False)
    model = kk.Model(inputs, kk.layers.Dense(2)(kk.layers.GlobalAveragePooling2D()(features)))
    x = images(4, 32, seed=3)
    np.testing.assert_allclose(kk.Model(inputs, features).predict(x, verbose=0),
                               base.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    before = base.get_weights()
    model.compile("sgd", kk.losses.SparseCategoricalCrossentropy(from_logits=True))
    head = model.layers[-1].get_weights()[0].copy()
    model.fit(x, np.array([0, 1, 0, 1]), epochs=1, verbose=0)
    for a, b in zip(before, base.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(head, model.layers[-1].get_weights()[0])
