"""The applications' other paths: ResNet50V2 and VGG19 against Keras (headless, with
pooling), the deeper and wider variants against a record of Keras's structure,
`weights="imagenet"` from the Keras cache (Keras 2 `.h5` files as Keras publishes them, with
EfficientNet's imagenet-only per-channel Rescaling compared with Keras), clear errors for a
missing or mismatching file, and `preprocess_input` / `decode_predictions`."""

import hashlib
import json
import os

import h5py
import numpy as np
import pytest
from applications_helpers import build_both, images
from keras_oracle import assert_outputs_close

from kiln import keras as kk
from kiln.keras.applications import imagenet_utils

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def keras_models_dir():
    path = os.path.join(os.environ["KERAS_HOME"], "models")
    os.makedirs(path, exist_ok=True)
    return path


@pytest.mark.parametrize("name, pooling", [("ResNet50V2", "max"), ("VGG19", "avg")])
def test_headless_variants_load_keras_weights_and_predict_like_keras(name, pooling,
                                                                     fast_keras_init, tmp_path):
    keras = fast_keras_init
    kiln_model, keras_model = build_both(keras, lambda K: getattr(K.applications, name)(
        include_top=False, weights=None, input_shape=(32, 32, 3), pooling=pooling))
    keras_model.save_weights(tmp_path / "keras.weights.h5")
    kiln_model.load_weights(tmp_path / "keras.weights.h5")
    x = images(2, 32)
    assert_outputs_close(kiln_model.predict(x, batch_size=2),
                         keras_model.predict(x, batch_size=2, verbose=0), "predict")


# Keras 3.15's models, include_top=False on (32, 32, 3): (layers, weights, parameters, the
# first 16 hex digits of the sha256 of "path:shape" of every weight in order, joined by "|")
KERAS_STRUCTURE = {
    "ResNet101": (345, 624, 42658176, "1346a854e69b51d0"),
    "ResNet152": (515, 930, 58370944, "c422192612495daa"),
    "ResNet101V2": (377, 542, 42626560, "526d5dc04c558b4d"),
    "ResNet152V2": (564, 814, 58331648, "5c92702884dbfcfe"),
    "EfficientNetB1": (339, 440, 6575239, "8b9cbf96f3fb79fb"),
    "EfficientNetB2": (339, 440, 7768569, "1ce8df7cb4185b50"),
    "EfficientNetB3": (384, 497, 10783535, "971bfdbf9cd594ea"),
    "EfficientNetB4": (474, 611, 17673823, "0d7a56b81b148083"),
    "EfficientNetB5": (576, 739, 28513527, "0c4a5db558c8880b"),
    "EfficientNetB6": (666, 853, 40960143, "323720328b4f7794"),
    "EfficientNetB7": (813, 1038, 64097687, "3b1ec2837e234b1e"),
}


@pytest.mark.parametrize("name", list(KERAS_STRUCTURE))
def test_deeper_and_wider_variants_have_keras_structure(name):
    kk.backend.clear_session(free_memory=False)  # automatic names ('rescaling') as recorded
    model = getattr(kk.applications, name)(include_top=False, weights=None,
                                           input_shape=(32, 32, 3))
    description = "|".join(f"{w.path}:{tuple(w.shape)}" for w in model.weights)
    digest = hashlib.sha256(description.encode()).hexdigest()[:16]
    assert (len(model.layers), len(model.weights), model.count_params(), digest) == (
        KERAS_STRUCTURE[name])


def save_keras2_h5(keras_model, path):
    """The Keras 2 weights file Keras publishes its ImageNet weights in."""
    from keras.src.legacy.saving import legacy_h5_format

    with h5py.File(path, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, keras_model)


def test_mobilenet_v2_imagenet_weights_come_from_the_keras_cache(fast_keras_init):
    keras = fast_keras_init
    keras_model = keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35,
                                                 include_top=False, weights=None)
    file_name = "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5"
    save_keras2_h5(keras_model, os.path.join(keras_models_dir(), file_name))
    model = kk.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35,
                                        include_top=False, weights="imagenet")
    assert model.name == "mobilenetv2_0.35_96"
    for weight, value, expected in zip(model.weights, model.get_weights(),
                                       keras_model.get_weights(), strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=weight.path)


def test_efficientnet_imagenet_path_predicts_like_keras(fast_keras_init, monkeypatch):
    """With 'imagenet' weights EfficientNet adds a per-channel Rescaling after its
    Normalization, whose mean and variance come from the file."""
    keras = fast_keras_init
    source = keras.applications.EfficientNetB0(include_top=False, weights=None,
                                                input_shape=(32, 32, 3), pooling="avg")
    normalization = source.get_layer("normalization")
    normalization.set_weights([np.array([0.485, 0.456, 0.406], np.float32),
                               np.array([0.052, 0.050, 0.051], np.float32), np.array(1.0)])
    path = os.path.join(keras_models_dir(), "efficientnetb0_notop.h5")
    save_keras2_h5(source, path)
    from keras.src.applications import efficientnet

    # Keras checks the published file's hash; this file is ours
    monkeypatch.setattr(efficientnet.file_utils, "get_file", lambda *args, **kwargs: path)
    kiln_model, keras_model = build_both(keras, lambda K: K.applications.EfficientNetB0(
        include_top=False, weights="imagenet", input_shape=(32, 32, 3), pooling="avg"))
    rescaling = kiln_model.layers[3]
    assert type(rescaling).__name__ == "Rescaling" and isinstance(rescaling.scale, list)
    x = images(2, 32)
    assert_outputs_close(kiln_model.predict(x, batch_size=2),
                         keras_model.predict(x, batch_size=2, verbose=0), "predict")


def test_a_missing_imagenet_file_says_where_to_put_it():
    folder = keras_models_dir()
    with pytest.raises(FileNotFoundError) as error:
        kk.applications.ResNet50(weights="imagenet")
    message = str(error.value)
    assert "resnet50_weights_tf_dim_ordering_tf_kernels.h5" in message
    assert folder in message and "downloads nothing" in message


def test_a_file_of_another_architecture_names_the_file_and_the_layer(tmp_path):
    path = str(tmp_path / "small.weights.h5")
    kk.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, include_top=False,
                                weights=None).save_weights(path)
    with pytest.raises(ValueError) as error:
        kk.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.5, include_top=False,
                                    weights=path)
    message = str(error.value)
    assert path in message and "does not fit this architecture" in message
    assert "'Conv_1'" in message and "(1, 1, 160, 1280)" in message  # a layer that differs


@pytest.mark.parametrize("build, message", [
    (lambda: kk.applications.VGG16(weights="nowhere.h5"), "the weights argument should be"),
    (lambda: kk.applications.ResNet50(weights="imagenet", classes=10), "classes should be 1000"),
    (lambda: kk.applications.ResNet50(weights=None, include_top=False,
                                      input_shape=(16, 16, 3)), "at least 32x32"),
    (lambda: kk.applications.MobileNetV2(weights="imagenet", alpha=0.6), "alpha must be one of"),
    (lambda: kk.applications.EfficientNetB0(weights="imagenet", include_top=True,
                                            classifier_activation="relu"),
     "Only None and 'softmax'"),
])
def test_bad_arguments_are_clear(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("mode", ["caffe", "tf", "torch"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_preprocess_input_equals_keras(mode, data_format, fast_keras_init):
    keras = fast_keras_init
    x = np.random.default_rng(0).uniform(0, 255, (2, 3, 4, 3)).astype(np.float32)
    if data_format == "channels_first":
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    expected = keras.applications.imagenet_utils.preprocess_input(x.copy(), data_format, mode)
    result = imagenet_utils.preprocess_input(x.copy(), data_format, mode)
    np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-5)
    # the same arithmetic on a symbolic tensor, inside a model
    inputs = kk.Input(x.shape[1:])
    model = kk.Model(inputs, imagenet_utils.preprocess_input(inputs, data_format, mode))
    np.testing.assert_allclose(model.predict(x, batch_size=2), expected, rtol=1e-6, atol=1e-4)


def test_module_preprocessing_modes():
    x = np.full((1, 2, 2, 3), 255.0, np.float32)
    assert np.allclose(kk.applications.mobilenet_v2.preprocess_input(x.copy()), 1.0)
    assert np.allclose(kk.applications.resnet_v2.preprocess_input(x.copy()), 1.0)
    assert np.allclose(kk.applications.vgg16.preprocess_input(x.copy())[..., 0], 255 - 103.939)
    assert kk.applications.efficientnet.preprocess_input(x) is x


def test_decode_predictions_reads_the_class_index_from_the_keras_cache(monkeypatch):
    monkeypatch.setattr(imagenet_utils, "CLASS_INDEX", None)
    with pytest.raises(FileNotFoundError, match="imagenet_class_index.json"):
        kk.applications.resnet50.decode_predictions(np.zeros((1, 1000)))
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    with open(os.path.join(keras_models_dir(), "imagenet_class_index.json"), "w") as f:
        json.dump(index, f)
    preds = np.zeros((2, 1000), np.float32)
    preds[0, [7, 3, 500]] = [0.5, 0.3, 0.2]
    preds[1, 999] = 1.0
    decoded = kk.applications.efficientnet.decode_predictions(preds, top=3)
    assert [(name, text) for name, text, _ in decoded[0]] == [
        ("n00000007", "class_7"), ("n00000003", "class_3"), ("n00000500", "class_500")]
    assert decoded[0][0][2] == pytest.approx(0.5) and decoded[1][0][:2] == ("n00000999",
                                                                              "class_999")
    with pytest.raises(ValueError, match=r"shape \(2, 10\)"):
        kk.applications.vgg16.decode_predictions(np.zeros((2, 10)))
