"""Losses on image-shaped outputs (a segmentation map): binary cross-entropy after a per-pixel
sigmoid and the element-wise regression losses are means over every pixel of a sample, as in
Keras (the mean over the last axis, then over the rest), in both data formats; the same logs,
history and weights as real Keras 3 after SGD epochs. (Cross-entropies over the classes of each
pixel: test_per_pixel_crossentropy_against_keras.py.)"""

import pytest
from fit_oracle import check_fit_against_keras


def segmentation(data_format, activation, binary=True):
    shape = (6, 6, 2) if data_format == "channels_last" else (2, 6, 6)

    def build(K):
        f = dict(data_format=data_format, padding="same")
        inputs = K.Input(shape)
        x = K.layers.Conv2D(4, 3, activation="relu", **f)(inputs)
        outputs = K.layers.Conv2D(1, 1, activation=activation, **f)(x)
        return K.Model(inputs, outputs)

    def make_y(rng, count):
        mask_shape = (count, 6, 6, 1) if data_format == "channels_last" else (count, 1, 6, 6)
        values = rng.random(mask_shape).astype("float32")
        # regression targets off 0: |x|'s slope at exactly 0 is backend-defined (an output
        # of exactly 0 from dead relus is likely here)
        return (values > 0.5).astype("float32") if binary else values + 0.5

    return build, make_y


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_per_pixel_sigmoid_binary_crossentropy(data_format):
    build, make_y = segmentation(data_format, "sigmoid")
    # binary_accuracy by name: Keras resolves 'accuracy' by the output's last axis, which is
    # the width under channels_first (a categorical accuracy over pixel columns)
    check_fit_against_keras(build, lambda K: dict(loss="binary_crossentropy",
                                                  metrics=["binary_accuracy"]), make_y)


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("loss", ["mse", "mae"])
def test_per_pixel_regression_losses(data_format, loss):
    build, make_y = segmentation(data_format, None, binary=False)
    check_fit_against_keras(build, lambda K: dict(loss=loss), make_y)
