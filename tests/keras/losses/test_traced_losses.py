"""A user's loss written with keras.ops (a function, a Loss subclass's call() with its own
arguments) trains in the step as in real Keras 3 (JAX backend): the same weights to start,
the same losses and weights after each epoch, with sample weights, on a Dense output and a
per-pixel loss on an image output in both data formats; what a loss cannot be says why."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import assert_weights_close, build_pair, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def train_both(build, loss, y, optimizer, epochs=2, sample_weight=None, batch_size=None):
    keras = real_keras()
    ours, theirs, x = build_pair(build)
    count = len(x)
    for model, K in ((ours, kk), (theirs, keras)):
        model.compile(optimizer=optimizer(K), loss=loss(K), metrics=["mae"])
    for epoch in range(epochs):
        logs = [model.fit(x, y, batch_size=batch_size or count, epochs=1, shuffle=False,
                          sample_weight=sample_weight, verbose=0).history
                for model in (ours, theirs)]
        for key in ("loss", "mae"):
            assert logs[0][key][0] == pytest.approx(float(logs[1][key][0]), rel=1e-4,
                                                    abs=1e-6), (key, epoch)
        assert_weights_close(ours, theirs, f"after epoch {epoch + 1}")
    return ours


def dense_model(K):
    inputs = K.Input((5,))
    hidden = K.layers.Dense(6, activation="tanh")(inputs)
    return K.Model(inputs, K.layers.Dense(3, activation="softmax")(hidden))


def focal_like(K):
    def focal_like(y_true, y_pred):
        """y_pred read three times: its gradients add up."""
        p = K.ops.clip(y_pred, 1e-4, 1.0)
        return K.ops.sum(-y_true * K.ops.log(p) * K.ops.square(1.0 - y_pred), axis=-1)

    return focal_like


@pytest.mark.parametrize("optimizer", [lambda K: K.optimizers.SGD(0.5),
                                       lambda K: K.optimizers.Adam(0.02)])
def test_a_loss_function_trains_as_keras(optimizer):
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 1, 0, 2]]
    weights = np.array([1.0, 0.5, 2.0, 1.0, 0.0, 1.5], np.float32)
    train_both(dense_model, focal_like, y, optimizer, sample_weight=weights, batch_size=4)


def pixel_loss_class(K):
    class ChannelWeightedError(K.losses.Loss):
        """A per-pixel loss: a weighted squared error averaged over the channel axis, one
        value per pixel (an unreduced (batch, height, width) tensor)."""

        def __init__(self, data_format, margin=0.1, **kwargs):
            super().__init__(**kwargs)
            self.axis = -1 if data_format == "channels_last" else 1
            self.margin = margin

        def call(self, y_true, y_pred):
            error = K.ops.maximum(K.ops.abs(y_pred - y_true) - self.margin, 0.0)
            return K.ops.mean(K.ops.square(error) + 0.5 * error, axis=self.axis)

    return ChannelWeightedError


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_a_loss_subclass_with_arguments_on_an_image_output_trains_as_keras(data_format):
    shape = (6, 6, 2) if data_format == "channels_last" else (2, 6, 6)

    def build(K):
        inputs = K.Input(shape)
        x = K.layers.Conv2D(4, 3, padding="same", activation="relu",
                            data_format=data_format)(inputs)
        return K.Model(inputs, K.layers.Conv2D(3, 1, data_format=data_format)(x))

    out_shape = (6, 6, 6, 3) if data_format == "channels_last" else (6, 3, 6, 6)
    y = np.random.default_rng(5).normal(size=out_shape).astype(np.float32)
    train_both(build, lambda K: pixel_loss_class(K)(data_format, margin=0.2), y,
               lambda K: K.optimizers.SGD(0.1))


def batch_losses(K):
    """Losses that return one value for the whole batch (a scalar), which Keras 3 accepts:
    its reduction leaves the scalar as it is, times the mean sample weight."""
    def batch_mse(y_true, y_pred):
        return K.ops.mean(K.ops.square(y_true - y_pred))

    def batch_rmse_plus_sum(y_true, y_pred):  # operations after the batch reduction too
        return (K.ops.sqrt(K.ops.mean(K.ops.square(y_true - y_pred)) + 1e-3)
                + 0.01 * K.ops.sum(K.ops.abs(y_pred), keepdims=True))

    return {"batch_mse": batch_mse, "batch_rmse_plus_sum": batch_rmse_plus_sum}


@pytest.mark.parametrize("name", ["batch_mse", "batch_rmse_plus_sum"])
def test_a_loss_reduced_over_the_batch_trains_as_keras(name):
    """Sample weights (and a smaller last batch) weigh the one value as Keras does."""
    y = np.random.default_rng(3).normal(size=(6, 3)).astype(np.float32)
    weights = np.array([1.0, 0.5, 2.0, 1.0, 0.0, 1.5], np.float32)
    train_both(dense_model, lambda K: batch_losses(K)[name], y,
               lambda K: K.optimizers.SGD(0.5), sample_weight=weights, batch_size=4)


def test_a_loss_subclass_reduced_over_the_batch_trains_as_keras():
    def loss(K):
        class BatchMeanError(K.losses.Loss):
            def call(self, y_true, y_pred):
                return K.ops.mean(K.ops.abs(y_true - y_pred))

        return BatchMeanError()

    y = np.random.default_rng(4).normal(size=(6, 3)).astype(np.float32)
    train_both(dense_model, loss, y, lambda K: K.optimizers.Adam(0.02))


def test_a_loss_reducing_the_batch_axis_alone_is_refused_by_name():
    def batch_mean(y_true, y_pred):
        return kk.ops.mean(kk.ops.square(y_pred - y_true), axis=0)

    with pytest.raises(NotImplementedError, match=r"loss 'batch_mean'.*mean.*batch axis"):
        dense_model(kk).compile(optimizer="sgd", loss=batch_mean)  # traced at compile


def test_a_loss_without_y_pred_in_it_is_refused():
    def labels_only(y_true, y_pred):
        return kk.ops.mean(kk.ops.square(y_true), axis=-1)

    with pytest.raises(ValueError, match=r"loss 'labels_only'.*does not depend on y_pred"):
        dense_model(kk).compile(optimizer="sgd", loss=labels_only)


def test_a_loss_without_y_true_trains_as_keras():
    """A penalty on the output alone (y_true unused), as Keras allows."""
    def penalty(K):
        def output_penalty(y_true, y_pred):
            return K.ops.sum(K.ops.square(y_pred - 0.3), axis=-1)
        return output_penalty

    train_both(dense_model, penalty, np.zeros((6, 3), np.float32),
               lambda K: K.optimizers.SGD(0.5))
