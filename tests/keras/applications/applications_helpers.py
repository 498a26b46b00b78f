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
