"""DenseNet, Xception, InceptionV3 and ConvNeXt against real Keras 3 (JAX backend): the same
layers and weights (names, shapes, paths, order), Keras's `.weights.h5` loaded into kiln gives
Keras's predictions, kiln's file loads into Keras with kiln's values; and one training step
of a ConvNeXt equal to Keras's (stochastic depth 0, as the ConvNeXt models have it: no random
masks). The smallest inputs Keras accepts keep them fast. DenseNet and the trained ConvNeXt
are built by their builders with fewer blocks (the same code as DenseNet121 / ConvNeXtTiny,
which are compared in structure elsewhere or here): compiling Keras's full models for
predict and train dominated these tests' time."""

import numpy as np
import pytest
from applications_helpers import build_both, images, weights_files_both_ways
from keras_oracle import RTOL, assert_outputs_close
from test_applications_against_keras import assert_step_close

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def builder(K, module, function):
    if K is kk:
        return getattr(getattr(kk.applications, module), function)
    import importlib

    return getattr(importlib.import_module(f"keras.src.applications.{module}"), function)


def small_densenet(K):
    return builder(K, "densenet", "DenseNet")([2, 1, 1, 2], weights=None,
                                              input_shape=(32, 32, 3), classes=10)


def small_convnext(K):
    # a larger layer scale than ConvNeXt's 1e-6 so that the blocks' weights matter in the step
    return builder(K, "convnext", "ConvNeXt")([1, 1, 2, 1], [8, 16, 24, 32],
                                              layer_scale_init_value=0.1,
                                              weights=None, input_shape=(32, 32, 3),
                                              classes=10)


def application(name, **kwargs):
    return lambda K: getattr(K.applications, name)(weights=None, **kwargs)


# name: (build(K), input size, preprocessing module, one training step)
CASES = {
    "DenseNet": (small_densenet, 32, "densenet", False),
    "Xception": (application("Xception", input_shape=(71, 71, 3), include_top=False,
                             pooling="avg"), 71, "xception", False),
    "InceptionV3": (application("InceptionV3", input_shape=(75, 75, 3), include_top=False,
                                pooling="max"), 75, "inception_v3", False),
    "ConvNeXtTiny": (application("ConvNeXtTiny", input_shape=(32, 32, 3), classes=10), 32,
                     "convnext", False),
    "ConvNeXt": (small_convnext, 32, "convnext", True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_weights_files_both_ways_and_predictions(name, fast_keras_init, tmp_path):
    keras = fast_keras_init
    build, size, module, train = CASES[name]
    kiln_model, keras_model = build_both(keras, build)
    x = getattr(kk.applications, module).preprocess_input(images(2, size))
    kiln_initial = weights_files_both_ways(
        kiln_model, keras_model, tmp_path, x,
        lambda ours, theirs: assert_outputs_close(ours, theirs, "predict"))

    if train:
        one_sgd_step_as_keras(keras, name, kiln_model, keras_model, kiln_initial, x)


def one_sgd_step_as_keras(keras, name, kiln_model, keras_model, initial, x):
    """One SGD step from the same weights: Keras's loss and every weight's update."""
    kiln_model.set_weights(initial)
    keras_model.set_weights(initial)
    y = np.eye(10, dtype=np.float32)[np.random.default_rng(1).integers(0, 10, len(x))]
    losses = []
    for K, model in ((kk, kiln_model), (keras, keras_model)):
        model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1),
                      loss="categorical_crossentropy")
        losses.append(model.fit(x, y, batch_size=len(x), epochs=1, shuffle=False,
                                verbose=0).history["loss"][0])
    assert losses[0] == pytest.approx(float(losses[1]), rel=RTOL), f"{name}: training loss"
    assert_step_close(kiln_model, initial, kiln_model.get_weights(), keras_model.get_weights(),
                      name)
