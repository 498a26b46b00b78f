"""MobileNet, MobileNetV3 and EfficientNetV2's other paths: `weights="imagenet"` from the
Keras cache (a Keras 2 `.h5` file as Keras publishes them) and the file names Keras gives
each variant, `input_tensor`, Keras's checks of bad arguments (the same calls raise in
Keras), and the modules' `preprocess_input` / `decode_predictions`."""

import os

import h5py
import numpy as np
import pytest

import kiln.keras.applications.efficientnet_v2
import kiln.keras.applications.mobilenet
import kiln.keras.applications.mobilenet_v3  # noqa: F401
from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

apps = kk.applications


def keras_models_dir():
    path = os.path.join(os.environ["KERAS_HOME"], "models")
    os.makedirs(path, exist_ok=True)
    return path


def test_mobilenet_v3_imagenet_weights_come_from_the_keras_cache(fast_keras_init):
    from keras.src.legacy.saving import legacy_h5_format

    keras_model = fast_keras_init.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), include_top=False, weights=None, pooling="avg")
    file_name = "weights_mobilenet_v3_small_224_1.0_float_no_top_v2.h5"
    with h5py.File(os.path.join(keras_models_dir(), file_name), "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, keras_model)
    with pytest.warns(UserWarning, match=r"Weights for input shape \(224, 224\)"):
        model = apps.mobilenet_v3.MobileNetV3Small(input_shape=(32, 32, 3), include_top=False,
                                                   weights="imagenet", pooling="avg")
    assert model.name == "MobileNetV3Small"
    for weight, value, expected in zip(model.weights, model.get_weights(),
                                       keras_model.get_weights(), strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=weight.path)


@pytest.mark.parametrize("build, file_name", [
    (lambda: apps.mobilenet.MobileNet(input_shape=(128, 128, 3), alpha=0.25,
                                      include_top=False, weights="imagenet"),
     "mobilenet_2_5_128_tf_no_top.h5"),
    (lambda: apps.mobilenet.MobileNet(input_shape=(100, 100, 3), alpha=0.5,
                                      include_top=False, weights="imagenet"),
     "mobilenet_5_0_224_tf_no_top.h5"),  # not an ImageNet size: 224's file, as Keras
    (lambda: apps.mobilenet_v3.MobileNetV3Large(alpha=0.75, weights="imagenet"),
     "weights_mobilenet_v3_large_224_0.75_float.h5"),
    (lambda: apps.mobilenet_v3.MobileNetV3Small(minimalistic=True, include_top=False,
                                                input_shape=(224, 224, 3),
                                                weights="imagenet"),
     "weights_mobilenet_v3_small_minimalistic_224_1.0_float_no_top_v2.h5"),
    (lambda: apps.efficientnet_v2.EfficientNetV2B0(include_top=False, weights="imagenet",
                                                   input_shape=(32, 32, 3)),
     "efficientnetv2-b0_notop.h5"),
])
@pytest.mark.filterwarnings("ignore:.*Weights for input shape")
def test_a_missing_imagenet_file_is_named_as_keras_names_it(build, file_name):
    with pytest.raises(FileNotFoundError) as error:
        build()
    message = str(error.value)
    assert file_name in message and keras_models_dir() in message
    assert "downloads nothing" in message


def test_input_tensor_is_the_model_input():
    inputs = kk.Input((40, 40, 3))
    model = apps.mobilenet_v3.MobileNetV3Small(input_tensor=inputs, weights=None,
                                               include_top=False, minimalistic=True)
    assert model.inputs[0] is inputs and model.outputs[0].shape == (None, 2, 2, 576)
    model = apps.mobilenet.MobileNet(input_tensor=inputs, weights=None, include_top=False,
                                     alpha=0.25, pooling="max")
    assert model.inputs[0] is inputs and model.outputs[0].shape == (None, 256)


# (kiln module, model, arguments, the message kiln gives): Keras raises ValueError too
BAD_ARGUMENTS = [
    ("mobilenet", "MobileNet", {"weights": "imagenet", "alpha": 0.3},
     "alpha can be one of 0.25, 0.50, 0.75 or 1.0"),
    ("mobilenet", "MobileNet", {"weights": "imagenet", "depth_multiplier": 2},
     "depth_multiplier must be 1"),
    ("mobilenet", "MobileNet", {"weights": None, "include_top": False,
                                "input_shape": (16, 16, 3)}, "at least 32x32"),
    ("mobilenet", "MobileNet", {"weights": "imagenet", "classes": 10},
     "classes should be 1000"),
    ("mobilenet_v3", "MobileNetV3Small", {"weights": None, "input_shape": (16, 16, 3)},
     "at least 32x32"),
    ("mobilenet_v3", "MobileNetV3Small", {"weights": "imagenet", "alpha": 0.5},
     "alpha can be one of 0.75, 1.0"),
    ("mobilenet_v3", "MobileNetV3Large", {"weights": "imagenet", "alpha": 0.75,
                                          "minimalistic": True}, "1.0 for minimalistic"),
    ("mobilenet_v3", "MobileNetV3Large", {"weights": "somewhere.weights.h5"},
     "the weights argument should be"),
    ("mobilenet_v3", "MobileNetV3Small", {"weights": None, "input_shape": (48, 48, 3),
                                          "input_tensor": "tensor"},
     r"input_shape\[1\] must equal input_tensor.shape\[2\]"),
    ("efficientnet_v2", "EfficientNetV2B0", {"weights": "imagenet", "classes": 10},
     "classes should be 1000"),
    ("efficientnet_v2", "EfficientNetV2S", {"weights": None, "include_top": False,
                                            "input_shape": (16, 16, 3)}, "at least 32x32"),
    # checked once the network is built, in Keras too
    ("mobilenet_v3", "MobileNetV3Small", {"weights": "imagenet", "minimalistic": True,
                                          "input_shape": (32, 32, 3),
                                          "classifier_activation": "relu"},
     "Only None and 'softmax'"),
]


@pytest.mark.parametrize("module, name, arguments, message", BAD_ARGUMENTS,
                         ids=[f"{case[1]}-{case[3][:20]}" for case in BAD_ARGUMENTS])
@pytest.mark.filterwarnings("ignore:.*Weights for input shape")
def test_bad_arguments_raise_as_in_keras(module, name, arguments, message, fast_keras_init):
    keras = fast_keras_init
    for K, builder in ((kk, getattr(getattr(kk.applications, module), name)),
                       (keras, getattr(keras.applications, name))):
        if arguments.get("input_tensor") == "tensor":  # another size than input_shape
            arguments = dict(arguments, input_tensor=K.Input((40, 40, 3)))
        with pytest.raises(ValueError, match=message if K is kk else None):
            builder(**arguments)


@pytest.mark.parametrize("module", ["mobilenet", "mobilenet_v3", "efficientnet_v2"])
def test_preprocess_input_equals_keras(module, fast_keras_init):
    keras = fast_keras_init
    x = np.random.default_rng(0).uniform(0, 255, (2, 4, 4, 3)).astype(np.float32)
    expected = getattr(keras.applications, module).preprocess_input(x.copy())
    result = getattr(apps, module).preprocess_input(x.copy())
    np.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-6)
    if module != "mobilenet":  # the model rescales: the function passes its input through
        assert getattr(apps, module).preprocess_input(x) is x
    assert getattr(apps, module).decode_predictions.__doc__ == (
        apps.imagenet_utils.decode_predictions.__doc__)
    with pytest.raises(ValueError, match=r"shape \(1, 10\)"):
        getattr(apps, module).decode_predictions(np.zeros((1, 10)))


NEW_MODELS = ["MobileNet", "MobileNetV3Small", "MobileNetV3Large", "EfficientNetV2B0",
              "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2S",
              "EfficientNetV2M", "EfficientNetV2L"]


@pytest.mark.parametrize("name", NEW_MODELS)
def test_exported_with_keras_arguments_and_defaults(name, fast_keras_init):
    import inspect

    def parameters(function):
        return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]

    assert parameters(getattr(apps, name)) == parameters(
        getattr(fast_keras_init.applications, name))
    assert name in apps.__all__
