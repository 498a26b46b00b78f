"""Shared by the applications tests: the same application built in Keras and kiln."""

import numpy as np
from keras_oracle import compare_structure

import kiln.keras.applications  # noqa: F401  (kiln.keras.applications, also as kk.applications)
from kiln import keras as kk


def build_both(keras, build):
    """(kiln model, Keras model) of `build(K)`, K = either module, with the same structure:
    layer names and classes, weight names, shapes and paths in order, parameter count."""
    kk.backend.clear_session(free_memory=False)
    keras.backend.clear_session(free_memory=False)
    kiln_model, keras_model = build(kk), build(keras)
    compare_structure(kiln_model, keras_model)
    return kiln_model, keras_model


def images(count, size, seed=0):
    """Pixels in [0, 255] (the models' own preprocessing, or preprocess_input, scales them)."""
    return np.random.default_rng(seed).uniform(0, 255, (count, size, size, 3)).astype(
        np.float32)


def weights_files_both_ways(kiln_model, keras_model, folder, x, assert_close):
    """Keras's .weights.h5 loads into kiln with the same values and then predictions on `x`
    that `assert_close(kiln's, Keras's)` accepts; kiln's file loads into Keras with kiln's
    values. Returns kiln's initial weights (both models hold them again afterwards)."""
    kiln_file, keras_file = folder / "kiln.weights.h5", folder / "keras.weights.h5"
    kiln_initial = kiln_model.get_weights()
    kiln_model.save_weights(kiln_file)
    keras_model.save_weights(keras_file)

    kiln_model.load_weights(keras_file)
    for weight, value, expected in zip(kiln_model.weights, kiln_model.get_weights(),
                                       keras_model.get_weights(), strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=f"{weight.path} from Keras")
    assert_close(kiln_model.predict(x, batch_size=len(x)),
                 keras_model.predict(x, batch_size=len(x), verbose=0))

    keras_model.load_weights(kiln_file)
    for weight, value, expected in zip(kiln_model.weights, keras_model.get_weights(),
                                       kiln_initial, strict=True):
        np.testing.assert_array_equal(value, expected, err_msg=f"{weight.path} from kiln")
    kiln_model.load_weights(kiln_file)
    return kiln_initial
