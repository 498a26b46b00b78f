"""A `Model.compute_loss` override that computes its loss from `y`, `sample_weight` and `x`
itself with keras.ops (the labels and weights reach the compiled step as buffers the trainer
fills per batch), against real Keras 3 (JAX): the loss each step reports and the weights
after it, from the same initial weights."""

import numpy as np
import pytest
from keras_oracle import ATOL, RTOL, assert_weights_close, build_pair, real_keras

from kiln import keras as kk


def two_layers(K, compute_loss, outputs=3):
    """A subclassed model of two Dense layers with `compute_loss(self, K, ...)`."""

    class Net(K.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = K.layers.Dense(5, activation="tanh", name="hidden")
            self.out = K.layers.Dense(outputs, name="out")

        def call(self, x):
            return self.out(self.hidden(x))

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            return compute_loss(self, K, x, y, y_pred, sample_weight, training)

    return Net(name="net")


def weighted_mse(model, K, x, y, y_pred, sample_weight, training):
    """A per-column weighted squared error, the whole loss (compile(loss=None))."""
    columns = K.ops.convert_to_tensor(np.array([1.0, 2.0, 0.5], np.float32))
    return K.ops.mean(K.ops.square(y - y_pred) * columns)


def labels_and_inputs(model, K, x, y, y_pred, sample_weight, training):
    """An absolute error of y plus a term of x and y_pred."""
    return (K.ops.mean(K.ops.abs(y - y_pred))
            + 0.1 * K.ops.mean(K.ops.square(K.ops.sum(y_pred, axis=1) - K.ops.sum(x, axis=1))))


def compiled_plus_labels(model, K, x, y, y_pred, sample_weight, training):
    """super().compute_loss (the compiled mse) plus a hinge-like term on y."""
    loss = super(type(model), model).compute_loss(x, y, y_pred, sample_weight, training)
    return loss + 0.5 * K.ops.mean(K.ops.relu(y - y_pred))


def weighted_by_sample(model, K, x, y, y_pred, sample_weight, training):
    """The squared error per sample times the sample weights, summed over the batch size."""
    per_sample = K.ops.sum(K.ops.square(y - y_pred), axis=1)
    if sample_weight is None:
        return K.ops.mean(per_sample)
    return K.ops.mean(per_sample * sample_weight)


def run_pair(compute_loss, loss, optimizer, steps=3, sample_weight=None):
    kiln_model, keras_model, _ = build_pair(lambda K: two_layers(K, compute_loss),
                                            input_shapes=(4,))
    keras = real_keras()
    kiln_model.compile(optimizer=optimizer(kk), loss=loss)
    keras_model.compile(optimizer=optimizer(keras), loss=loss)
    rng = np.random.default_rng(0)
    x = rng.random((6, 4)).astype(np.float32)
    y = rng.random((6, 3)).astype(np.float32)
    for step in range(steps):
        kiln_loss = kiln_model.train_on_batch(x, y, sample_weight=sample_weight)
        keras_loss = keras_model.train_on_batch(x, y, sample_weight=sample_weight)
        assert kiln_loss == pytest.approx(float(keras_loss), rel=RTOL, abs=ATOL), step
        assert_weights_close(kiln_model, keras_model, f"after step {step + 1}")
    return kiln_model, keras_model, x, y


SGD = lambda K: K.optimizers.SGD(learning_rate=0.1)  # noqa: E731
ADAM = lambda K: K.optimizers.Adam(learning_rate=0.01)  # noqa: E731


@pytest.mark.parametrize("compute_loss, loss, optimizer", [
    (weighted_mse, None, SGD),
    (labels_and_inputs, None, ADAM),
    (compiled_plus_labels, "mse", SGD),
    (weighted_mse, "mse", ADAM),  # the compiled loss is not part of an override's own loss
])
def test_an_override_computing_its_loss_from_y_trains_as_keras(compute_loss, loss, optimizer):
    kiln_model, keras_model, x, y = run_pair(compute_loss, loss, optimizer)
    assert kiln_model.evaluate(x, y, verbose=0) == pytest.approx(
        float(keras_model.evaluate(x, y, verbose=0)), rel=RTOL, abs=ATOL)


def test_an_override_reading_sample_weight_trains_as_keras():
    weights = np.array([1.0, 0.0, 2.0, 0.5, 1.0, 3.0], np.float32)
    kiln_model, keras_model, x, y = run_pair(weighted_by_sample, None, SGD, steps=2,
                                             sample_weight=weights)
    # without weights the same override takes its other branch, on both sides
    for _ in range(2):
        kiln_loss, keras_loss = kiln_model.train_on_batch(x, y), keras_model.train_on_batch(x, y)
        assert kiln_loss == pytest.approx(float(keras_loss), rel=RTOL, abs=ATOL)
    assert_weights_close(kiln_model, keras_model, "after steps without weights")
    kiln_eval = kiln_model.evaluate(x, y, sample_weight=weights, verbose=0)
    keras_eval = keras_model.evaluate(x, y, sample_weight=weights, verbose=0)
    assert kiln_eval == pytest.approx(float(keras_eval), rel=RTOL, abs=ATOL)


def test_fit_logs_the_override_loss_as_keras():
    kiln_model, keras_model, _ = build_pair(lambda K: two_layers(K, labels_and_inputs),
                                            input_shapes=(4,))
    keras = real_keras()
    kiln_model.compile(optimizer=SGD(kk), loss=None)
    keras_model.compile(optimizer=SGD(keras), loss=None)
    rng = np.random.default_rng(1)
    x = rng.random((8, 4)).astype(np.float32)
    y = rng.random((8, 3)).astype(np.float32)
    kiln_history = kiln_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    keras_history = keras_model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert kiln_history.history["loss"] == pytest.approx(keras_history.history["loss"],
                                                         rel=RTOL, abs=ATOL)
    assert_weights_close(kiln_model, keras_model, "after fit")


def test_labels_of_another_shape_than_the_output_are_refused_by_name():
    model = two_layers(kk, weighted_mse)
    model.build((None, 4))
    model.compile(optimizer="sgd", loss=None)
    x = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"argument y must have shape \(4, 3\).*compute_loss"):
        model.train_on_batch(x, np.ones((4, 2), np.float32))


def test_super_compute_loss_must_get_the_labels_unchanged():
    def rescaled(model, K, x, y, y_pred, sample_weight, training):
        return super(type(model), model).compute_loss(x, 2.0 * y, y_pred, sample_weight,
                                                      training)

    model = two_layers(kk, rescaled)
    model.build((None, 4))
    with pytest.raises(NotImplementedError, match="another y than it was called with"):
        model.compile(optimizer="sgd", loss="mse")


def test_an_override_reading_y_without_labels_says_so():
    model = two_layers(kk, weighted_mse)
    model.build((None, 4))
    model.compile(optimizer="sgd", loss=None)
    with pytest.raises(ValueError, match=r"compute_loss was called with y=None.*pass y"):
        model.fit(np.ones((4, 4), np.float32), epochs=1, verbose=0)
