"""The image preprocessing / augmentation layers against real Keras 3 (JAX backend): configs,
Resizing and CenterCrop trained through the shared checker, the random layers predicting as the
identity, fit() with all of them (reproducible under keras.utils.set_random_seed), a .keras
round trip, and clear errors for bad arguments. The ops' values and draws are tested in
tests/ops/test_image_ops.py."""

import json

import numpy as np
import pytest
from keras_oracle import check_against_keras, real_keras

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Explicitly requested dtype int64:UserWarning"),  # MixUp
]

CL, CF = "channels_last", "channels_first"

LAYERS = {  # name -> layer on either API with a data format
    "resizing": lambda K, f, **kw: K.layers.Resizing(5, 4, data_format=f, **kw),
    "resizing-options": lambda K, f, **kw: K.layers.Resizing(
        4, 6, interpolation="bicubic", crop_to_aspect_ratio=True, data_format=f, **kw),
    "resizing-pad": lambda K, f, **kw: K.layers.Resizing(
        6, 4, interpolation="nearest", pad_to_aspect_ratio=True, fill_value=0.5,
        data_format=f, **kw),
    "center-crop": lambda K, f, **kw: K.layers.CenterCrop(4, 3, data_format=f, **kw),
    "random-crop": lambda K, f, **kw: K.layers.RandomCrop(4, 3, seed=2, data_format=f, **kw),
    "flip": lambda K, f, **kw: K.layers.RandomFlip("horizontal", seed=1, data_format=f, **kw),
    "flip-default": lambda K, f, **kw: K.layers.RandomFlip(data_format=f, **kw),
    "rotation": lambda K, f, **kw: K.layers.RandomRotation(0.2, seed=1, data_format=f, **kw),
    "rotation-options": lambda K, f, **kw: K.layers.RandomRotation(
        (-0.1, 0.3), fill_mode="constant", interpolation="nearest", fill_value=1.0,
        data_format=f, **kw),
    "zoom": lambda K, f, **kw: K.layers.RandomZoom(0.2, seed=1, data_format=f, **kw),
    "zoom-width": lambda K, f, **kw: K.layers.RandomZoom((-0.3, 0.1), 0.2, fill_mode="wrap",
                                                   data_format=f, **kw),
    "translation": lambda K, f, **kw: K.layers.RandomTranslation(0.1, (-0.2, 0.3), seed=1,
                                                           data_format=f, **kw),
    "contrast": lambda K, f, **kw: K.layers.RandomContrast(0.3, seed=1, data_format=f, **kw),
    "contrast-pair": lambda K, f, **kw: K.layers.RandomContrast((0.2, 0.5), value_range=(0, 1),
                                                          data_format=f, **kw),
    "brightness": lambda K, f, **kw: K.layers.RandomBrightness(0.2, seed=1, data_format=f, **kw),
    "brightness-pair": lambda K, f, **kw: K.layers.RandomBrightness(
        (-0.1, 0.2), value_range=(1, 0), data_format=f, **kw),
    "shear": lambda K, f, **kw: K.layers.RandomShear(0.2, (0.1, 0.3), seed=1, data_format=f,
                                                     **kw),
    "shear-default": lambda K, f, **kw: K.layers.RandomShear(
        interpolation="nearest", fill_mode="constant", data_format=f, **kw),
    "grayscale": lambda K, f, **kw: K.layers.RandomGrayscale(0.3, data_format=f, **kw),
    "erasing": lambda K, f, **kw: K.layers.RandomErasing(seed=2, data_format=f, **kw),
    "erasing-options": lambda K, f, **kw: K.layers.RandomErasing(
        (0.2, 0.7), scale=(0.1, 0.2), fill_value=0.5, value_range=(0, 1), data_format=f, **kw),
    "mixup": lambda K, f, **kw: K.layers.MixUp(0.3, seed=4, data_format=f, **kw),
    "cutmix": lambda K, f, **kw: K.layers.CutMix(0.5, seed=4, data_format=f, **kw),
}
RANDOM = ["random-crop", "flip", "rotation", "zoom", "translation", "contrast", "brightness",
          "shear", "grayscale", "erasing", "mixup", "cutmix"]


@pytest.mark.parametrize("data_format", [CL, CF])
def test_configs_are_keras_configs(data_format):
    keras = real_keras()
    for name, make in LAYERS.items():
        kiln_layer = make(kk, data_format, name="x")
        keras_layer = make(keras, data_format, name="x")
        assert kiln_layer.get_config() == keras_layer.get_config(), name
        again = type(kiln_layer).from_config(kiln_layer.get_config())
        assert again.get_config() == kiln_layer.get_config(), name


def conv_model(layer, data_format, shape=(7, 6, 3)):
    shape = shape if data_format == CL else (shape[2], *shape[:2])

    def build(K):
        inputs = K.Input(shape)
        x = layer(K, data_format)(inputs)
        x = K.layers.Conv2D(3, 2, activation="relu", data_format=data_format)(x)
        x = K.layers.Flatten(data_format=data_format)(x)
        return K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    return build


@pytest.mark.parametrize("name,data_format", [
    ("resizing", CL), ("resizing-options", CF), ("resizing-pad", CL), ("center-crop", CF)])
def test_resizing_layers_train_like_keras(name, data_format):
    check_against_keras(conv_model(LAYERS[name], data_format), optimizers=["sgd"])


@pytest.mark.parametrize("data_format", [CL, CF])
def test_random_layers_predict_like_keras(data_format):
    def layer(K, f):
        def apply(x):
            for name in RANDOM[1:]:  # RandomCrop: see the next test
                x = LAYERS[name](K, f)(x)
            return x
        return apply
    check_against_keras(conv_model(layer, data_format), train=False)


def test_random_crop_predicts_the_centred_window():
    # Keras documents a centred crop outside training; Keras 3.15's code returns the input
    # unchanged (another shape than it declares), so kiln is compared with the documented rule
    keras = real_keras()
    x = np.random.default_rng(0).uniform(size=(3, 7, 9, 2)).astype(np.float32)
    inputs = kk.Input((7, 9, 2))
    model = kk.Model(inputs, kk.layers.RandomCrop(4, 4, seed=1)(inputs))
    expected = keras.ops.image.resize(x, (4, 4), crop_to_aspect_ratio=True)
    np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(expected), atol=1e-6)


def augmented_model(data_format):
    shape = (9, 8, 3) if data_format == CL else (3, 9, 8)
    inputs = kk.Input(shape)
    x = kk.layers.Resizing(8, 8, data_format=data_format)(inputs)
    for name in RANDOM:
        x = LAYERS[name](kk, data_format)(x)
    x = kk.layers.Conv2D(4, 3, data_format=data_format)(x)
    x = kk.layers.GlobalAveragePooling2D(data_format=data_format)(x)
    return kk.Model(inputs, kk.layers.Dense(3, activation="softmax")(x))


@pytest.mark.parametrize("data_format", [CL, CF])
def test_models_with_augmentation_train_and_are_reproducible(data_format, tmp_path):
    rng = np.random.default_rng(0)
    shape = (32, 9, 8, 3) if data_format == CL else (32, 3, 9, 8)
    x = rng.uniform(0, 255, size=shape).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]

    def run(seed):
        kk.backend.clear_session()
        kk.utils.set_random_seed(seed)
        model = augmented_model(data_format)
        model.compile(optimizer=kk.optimizers.SGD(1e-4), loss="categorical_crossentropy")
        history = model.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0)
        return model, history.history["loss"]

    model, losses = run(3)
    assert all(np.isfinite(losses))
    again, same = run(3)
    np.testing.assert_array_equal(losses, same)
    _, other = run(4)
    assert other != losses
    # the random layers are the identity in predict: two calls agree
    np.testing.assert_array_equal(model.predict(x[:4], verbose=0),
                                  model.predict(x[:4], verbose=0))
    path = tmp_path / "augmented.keras"
    model.save(path)
    loaded = kk.models.load_model(path)
    # through JSON, as the file holds them (tuples become lists, on Keras's side too)
    assert [json.loads(json.dumps(layer.get_config())) for layer in loaded.layers] == [
        json.loads(json.dumps(layer.get_config())) for layer in model.layers]
    np.testing.assert_allclose(loaded.predict(x[:4], verbose=0),
                               model.predict(x[:4], verbose=0), rtol=1e-6)


BAD = [
    (lambda: kk.layers.RandomRotation(1.5), "RandomRotation", "factor", "[-1, 1]"),
    (lambda: kk.layers.RandomRotation(0.1, fill_mode="mirror"), "RandomRotation",
     "fill_mode", "'reflect', 'wrap', 'constant', 'nearest'"),
    (lambda: kk.layers.RandomRotation(0.1, interpolation="bicubic"), "RandomRotation",
     "interpolation", "'nearest', 'bilinear'"),
    (lambda: kk.layers.RandomZoom(-1.0), "RandomZoom", "height_factor", "(-1, 1]"),
    (lambda: kk.layers.RandomZoom(0.1, width_factor=(0.1, 0.2, 0.3)), "RandomZoom",
     "width_factor", "(-1, 1]"),
    (lambda: kk.layers.RandomTranslation(0.1, 2), "RandomTranslation", "width_factor",
     "[-1, 1]"),
    (lambda: kk.layers.RandomTranslation("a", 0.1), "RandomTranslation", "height_factor",
     "[-1, 1]"),
    (lambda: kk.layers.RandomContrast(1.5), "RandomContrast", "factor", "[0, 1]"),
    (lambda: kk.layers.RandomBrightness(0.1, value_range=5), "RandomBrightness",
     "value_range", "pair"),
    (lambda: kk.layers.RandomFlip("diagonal"), "RandomFlip", "mode", "'horizontal'"),
    (lambda: kk.layers.Resizing(4, 4, interpolation="gaussian"), "Resizing", "interpolation",
     "'bilinear'"),
    (lambda: kk.layers.Resizing(4, 4, fill_mode="reflect"), "Resizing", "fill_mode",
     "'constant'"),
    (lambda: kk.layers.Resizing(4, 4, crop_to_aspect_ratio=True, pad_to_aspect_ratio=True),
     "Resizing", "crop_to_aspect_ratio", "only one"),
    (lambda: kk.layers.Resizing(0, 4), "Resizing", "height", "positive integer"),
    (lambda: kk.layers.CenterCrop(4, 2.5), "CenterCrop", "width", "positive integer"),
    (lambda: kk.layers.RandomCrop(4, 4, seed="x"), "RandomCrop", "seed", "integer"),
    (lambda: kk.layers.RandomShear(-0.5), "RandomShear", "x_factor", "[0, 1]"),
    (lambda: kk.layers.RandomShear(0.1, 1.5), "RandomShear", "y_factor", "[0, 1]"),
    (lambda: kk.layers.RandomShear(0.1, (0.5, 1.5)), "RandomShear", "y_factor", "[-1, 1]"),
    (lambda: kk.layers.RandomShear(0.1, fill_mode="edge"), "RandomShear", "fill_mode",
     "'reflect'"),
    (lambda: kk.layers.RandomGrayscale(1.2), "RandomGrayscale", "factor", "[0, 1]"),
    (lambda: kk.layers.RandomErasing(scale=(2, 3)), "RandomErasing", "scale", "[0, 1]"),
    (lambda: kk.layers.RandomErasing(fill_value=(1, 2)), "RandomErasing", "fill_value",
     "three numbers"),
    (lambda: kk.layers.MixUp(alpha=0), "MixUp", "alpha", "positive"),
    (lambda: kk.layers.CutMix(factor=-0.5), "CutMix", "factor", "[0, 1]"),
]


@pytest.mark.parametrize("index", range(len(BAD)))
def test_bad_arguments_name_the_layer_and_argument(index):
    make, layer, argument, expected = BAD[index]
    with pytest.raises(ValueError) as error:
        make()
    message = str(error.value)
    assert layer in message and argument in message and expected in message, message


def test_bad_inputs_name_the_layer():
    inputs = kk.Input((8, 3))
    with pytest.raises(ValueError, match="RandomFlip.*4D image batch"):
        kk.layers.RandomFlip()(inputs)
    inputs = kk.Input((8, 8, 2))
    model = kk.Model(inputs, kk.layers.RandomGrayscale()(inputs))
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="RandomGrayscale.*3 channels"):
        model.fit(np.zeros((2, 8, 8, 2), np.float32), np.zeros((2, 8, 8, 2), np.float32),
                  verbose=0)
