"""Categorical and sparse categorical cross-entropy on image outputs (a segmentation map,
one softmax per pixel) against real Keras 3 (JAX backend): the loss is the mean over the batch
and the pixels, per-pixel sample weights weight it, and accuracy / categorical_accuracy /
sparse_categorical_accuracy count every pixel. The same batch logs, history, weights after
an SGD epoch of two steps and evaluate() as Keras (fit_oracle.py), for a fused final softmax,
logits, a softmax output the head reads as probabilities, and channels_first outputs with
axis=1."""

import warnings

import numpy as np
import pytest
from fit_oracle import check_fit_against_keras

from kiln import keras as kk

CLASSES, SIDE = 3, 5


@pytest.fixture(autouse=True)
def quiet_jax():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        yield


def segmenter(data_format="channels_last", last=lambda K, x: x, activation="softmax"):
    """Conv2D + Conv2D(CLASSES, 1 x 1, `activation`), then `last(K, x)` on the output."""
    shape = (SIDE, SIDE, 2) if data_format == "channels_last" else (2, SIDE, SIDE)

    def build(K):
        f = dict(data_format=data_format, padding="same")
        inputs = K.Input(shape)
        x = K.layers.Conv2D(4, 3, activation="tanh", **f)(inputs)
        x = K.layers.Conv2D(CLASSES, 1, activation=activation, **f)(x)
        return K.Model(inputs, last(K, x))

    return build


def class_ids(rng, count):
    return rng.integers(0, CLASSES, (count, SIDE, SIDE))


def one_hot(axis=-1):
    def make_y(rng, count):
        y = np.eye(CLASSES, dtype=np.float32)[class_ids(rng, count)]
        return np.moveaxis(y, -1, axis)

    return make_y


def pixel_weights(rng, count, y):
    return dict(sample_weight=rng.uniform(0.2, 2.0, (count, SIDE, SIDE)).astype(np.float32))


def first_class(y_true, y_pred):
    """A user metric (run on the output the step left): class 0's probability per pixel."""
    return y_pred[..., 0]


def first_class_channels_first(y_true, y_pred):
    return y_pred[:, 0]


def test_sparse_fused_softmax_with_accuracy():
    check_fit_against_keras(segmenter(), lambda K: dict(
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy", "sparse_categorical_accuracy", first_class]), class_ids,
        batch_size=4, epochs=1)


def test_categorical_fused_softmax_label_smoothing_and_pixel_weights():
    check_fit_against_keras(segmenter(), lambda K: dict(
        loss=K.losses.CategoricalCrossentropy(label_smoothing=0.1),
        metrics=["accuracy"], weighted_metrics=["categorical_accuracy"]), one_hot(),
        batch_size=4, fit_args=pixel_weights, compare_list=False, epochs=1)


def test_sparse_from_logits_with_pixel_weights():
    check_fit_against_keras(segmenter(activation=None), lambda K: dict(
        loss=K.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["sparse_categorical_accuracy"], weighted_metrics=["accuracy", first_class]),
        class_ids,
        batch_size=4, fit_args=pixel_weights, compare_list=False, epochs=1)


def test_softmax_read_as_probabilities():
    # a linear Activation after the softmax: the head reads probabilities (normalized and
    # clipped, differentiated exactly), nothing fused
    last = lambda K, x: K.layers.Activation("linear")(x)  # noqa: E731
    check_fit_against_keras(segmenter(last=last), lambda K: dict(
        loss="categorical_crossentropy", metrics=["accuracy"]), one_hot(), batch_size=4,
        epochs=1)


@pytest.mark.parametrize("case", ["logits", "softmax_layer", "softmax_over_width"])
def test_channels_first_classes_on_axis_1(case):
    # logits with from_logits, a Softmax(axis=1) layer the head fuses, and Conv2D's own
    # softmax, which is over the last axis (the width) and read as probabilities over axis 1
    activation = "softmax" if case == "softmax_over_width" else None
    last = ((lambda K, x: K.layers.Softmax(axis=1)(x)) if case == "softmax_layer"
            else (lambda K, x: x))
    check_fit_against_keras(
        segmenter("channels_first", last, activation), lambda K: dict(
            loss=K.losses.CategoricalCrossentropy(from_logits=case == "logits", axis=1),
            metrics=[first_class_channels_first]),
        one_hot(axis=1), batch_size=4, epochs=1)


def test_a_flattened_image_output_is_one_row_per_sample():
    # Flatten keeps the 4D bytes: the head reads them in Keras' (h, w, c) order, one row each
    def build(K):
        inputs = K.Input((4, 4, 2))
        return K.Model(inputs, K.layers.Flatten()(K.layers.Conv2D(3, 3, padding="same")(
            inputs)))

    check_fit_against_keras(build, lambda K: dict(
        loss=K.losses.CategoricalCrossentropy(from_logits=True), metrics=["accuracy"]),
        lambda rng, count: np.eye(48, dtype=np.float32)[rng.integers(0, 48, count)],
        batch_size=3, epochs=1)


def _compiled(build, loss, metrics=()):
    kk.backend.clear_session()
    model = build(kk)
    model.compile(optimizer="sgd", loss=loss, metrics=list(metrics))
    return model


def test_bad_axes_and_weights_are_refused_by_name():
    x = np.zeros((2, 2, SIDE, SIDE), np.float32)
    first = segmenter("channels_first", activation=None)
    with pytest.raises(ValueError, match=r"loss 'categorical_crossentropy': argument axis=-1"):
        _compiled(first, kk.losses.CategoricalCrossentropy(from_logits=True)).train_on_batch(
            x, np.zeros((2, CLASSES, SIDE, SIDE), np.float32))
    with pytest.raises(ValueError, match=r"loss 'sparse_categorical_crossentropy': argument "
                                         r"axis=1 .* one-hot labels only"):
        _compiled(first, kk.losses.SparseCategoricalCrossentropy(axis=1)).train_on_batch(
            x, np.zeros((2, SIDE, SIDE)))
    with pytest.raises(ValueError, match=r"metric 'accuracy': .* channels_first"):
        _compiled(first, kk.losses.CategoricalCrossentropy(from_logits=True, axis=1),
                  ["accuracy"]).train_on_batch(x, np.zeros((2, CLASSES, SIDE, SIDE)))
    last = _compiled(segmenter(), "sparse_categorical_crossentropy")
    images = np.zeros((2, SIDE, SIDE, 2), np.float32)
    with pytest.raises(ValueError, match=r"sample_weight must have one weight per pixel"):
        last.train_on_batch(images, np.zeros((2, SIDE, SIDE)), sample_weight=np.ones(2))
    with pytest.raises(ValueError, match=r"class_weight needs one class per sample"):
        last.fit(images, np.zeros((2, SIDE, SIDE)), class_weight={0: 1.0, 1: 2.0}, verbose=0)
    with pytest.raises(ValueError, match=r"sample 1 of the batch, pixel \(0, 2\), has class "
                                         r"id 3.0"):
        ids = np.zeros((2, SIDE, SIDE))
        ids[1, 0, 2] = CLASSES
        last.train_on_batch(images, ids)


def test_class_ids_of_a_whole_array_are_checked_before_the_first_step():
    model = _compiled(segmenter(), "sparse_categorical_crossentropy")
    before = [w.copy() for w in model.get_weights()]
    ids = np.zeros((8, SIDE, SIDE))
    ids[6, 4, 1] = -1  # in the last batch of 4
    with pytest.raises(ValueError, match=r"sample 6, pixel \(4, 1\), has class id -1.0"):
        model.fit(np.zeros((8, SIDE, SIDE, 2), np.float32), ids, batch_size=4, verbose=0)
    for weight, old in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(weight, old)


def test_a_small_unet_with_a_softmax_per_pixel_learns():
    kk.backend.clear_session()
    inputs = kk.Input((8, 8, 1))
    down = kk.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = kk.layers.MaxPooling2D()(down)
    x = kk.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = kk.layers.UpSampling2D()(x)
    x = kk.layers.Concatenate()([x, down])
    outputs = kk.layers.Conv2D(CLASSES, 1, activation="softmax")(x)
    model = kk.Model(inputs, outputs)
    model.compile(optimizer=kk.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rng = np.random.default_rng(0)
    images = rng.random((32, 8, 8, 1)).astype(np.float32)
    masks = np.digitize(images[..., 0], [0.33, 0.66])  # the class is the pixel's brightness
    history = model.fit(images, masks, epochs=15, batch_size=8, verbose=0).history
    losses = history["loss"]
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
    assert losses[-1] < 0.75 * losses[0]
    assert history["accuracy"][-1] > history["accuracy"][0] + 0.2
    predicted = model.predict(images, verbose=0)
    assert predicted.shape == (32, 8, 8, CLASSES)
    np.testing.assert_allclose(predicted.sum(axis=-1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("data_format, last, activation, fused", [
    ("channels_last", lambda K, x: x, "softmax", True),            # Conv2D's own softmax
    ("channels_first", lambda K, x: K.layers.Softmax(axis=1)(x), None, True),
    ("channels_first", lambda K, x: x, "softmax", False),          # a softmax over the width
])
def test_the_softmax_over_the_classes_is_taken_by_the_head(data_format, last, activation,
                                                             fused):
    model = _compiled(segmenter(data_format, last, activation),
                      kk.losses.CategoricalCrossentropy(axis=-1 if data_format ==
                                                        "channels_last" else 1))
    model._build_if_possible()
    plan = model._plan(True, 2)
    labels = [call.label for call in plan.calls]
    assert plan.heads[0].fused == fused
    # fused: one oneDNN softmax over the classes of the rows and one pass, no model softmax
    assert ("categorical_crossentropy softmax cross-entropy per pixel" in labels) == fused
    assert ("categorical_crossentropy softmax" in labels) == fused
    assert any(label.endswith("cross-entropy on probabilities per pixel")
               for label in labels) != fused
