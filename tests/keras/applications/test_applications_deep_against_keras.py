"""DenseNet121, Xception, InceptionV3 and ConvNeXtTiny against real Keras 3 (JAX backend): the
same layers and weights (names, shapes, paths, order), Keras's `.weights.h5` loaded into kiln
gives Keras's predictions, kiln's file loads into Keras with kiln's values; ConvNeXtTiny also
one training step equal to Keras's (its stochastic depth is 0: no random masks). The smallest
inputs Keras accepts keep them fast."""

import numpy as np
import pytest
from applications_helpers import build_both, images
from keras_oracle import RTOL, assert_outputs_close
from test_applications_against_keras import assert_step_close

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

# name: (input size, preprocessing module, keyword arguments); one training step for those
# with classes
CASES = {"DenseNet121": (32, "densenet", {"classes": 10}),
         "Xception": (71, "xception", {"include_top": False, "pooling": "avg"}),
         "InceptionV3": (75, "inception_v3", {"include_top": False, "pooling": "max"}),
         "ConvNeXtTiny": (32, "convnext", {"classes": 10})}


@pytest.mark.parametrize("name", list(CASES))
def test_weights_files_both_ways_and_predictions(name, fast_keras_init, tmp_path):
    keras = fast_keras_init
    size, module, kwargs = CASES[name]
    kiln_model, keras_model = build_both(keras, lambda K: getattr(K.applications, name)(
        weights=None, input_shape=(size, size, 3), **kwargs))
    kiln_file, keras_file = tmp_path / "kiln.weights.h5", tmp_path / "keras.weights.h5"
    kiln_initial = kiln_model.get_weights()
    kiln_model.save_weights(kiln_file)
    keras_model.save_weights(keras_file)

    kiln_model.load_weights(keras_file)
    for weight, value, expected in zip(kiln_model.weights, kiln_model.get_weights(),
                                       keras_model.get_weights(), strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=f"{weight.path} from Keras")
    x = getattr(kk.applications, module).preprocess_input(images(2, size))
    assert_outputs_close(kiln_model.predict(x, batch_size=2),
                         keras_model.predict(x, batch_size=2, verbose=0), "predict")

    keras_model.load_weights(kiln_file)
    for weight, value, expected in zip(kiln_model.weights, keras_model.get_weights(),
                                       kiln_initial, strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=f"{weight.path} from kiln")

    if name == "ConvNeXtTiny":
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

