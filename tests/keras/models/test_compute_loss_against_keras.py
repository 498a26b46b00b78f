"""`Model.compute_loss` overridden in a subclass (Keras 3's backend-agnostic way to change the
loss), against real Keras 3 (JAX): the override is traced once into the compiled step, with
`super().compute_loss(...)` standing for the compiled loss and the added losses; a
`train_step` override (backend-specific in Keras 3) is refused naming compute_loss."""

import numpy as np
import pytest
from keras_oracle import ATOL, RTOL, assert_weights_close, build_pair, real_keras

from kiln import keras as kk


def penalized(K):
    """The compiled loss plus an activity penalty on the predictions, and an add_loss."""

    class Penalized(K.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = K.layers.Dense(5, activation="relu", name="hidden")
            self.out = K.layers.Dense(3, name="out")

        def call(self, x):
            h = self.hidden(x)
            self.add_loss(0.05 * K.ops.mean(K.ops.square(h)))
            return self.out(h)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            return loss + 0.1 * K.ops.mean(K.ops.square(y_pred))

    return Penalized(name="penalized")


def reconstruction(K):
    """The whole loss computed from x and y_pred (no compiled loss, no super())."""

    class Reconstruct(K.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.code = K.layers.Dense(2, activation="tanh", name="code")
            self.back = K.layers.Dense(4, name="back")

        def call(self, x):
            return self.back(self.code(x))

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            return K.ops.mean(K.ops.sum(K.ops.square(y_pred - x), axis=1))

    return Reconstruct(name="reconstruct")


def trained_pair(build, shape, **compile_args):
    kiln_model, keras_model, _ = build_pair(build, input_shapes=shape)
    keras = real_keras()
    kiln_model.compile(optimizer=kk.optimizers.SGD(learning_rate=0.1), **compile_args)
    keras_model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), **compile_args)
    return kiln_model, keras_model


@pytest.mark.parametrize("build, shape, loss", [(penalized, (4,), "mse"),
                                                (reconstruction, (4,), None)])
def test_a_compute_loss_override_trains_as_keras(build, shape, loss):
    kiln_model, keras_model = trained_pair(build, shape, loss=loss)
    rng = np.random.default_rng(0)
    x = rng.random((6, *shape)).astype(np.float32)
    y = rng.random((6, 3 if loss else 4)).astype(np.float32)
    for step in range(2):
        kiln_loss = kiln_model.train_on_batch(x, y)
        keras_loss = keras_model.train_on_batch(x, y)
        assert kiln_loss == pytest.approx(float(keras_loss), rel=RTOL, abs=ATOL), step
        assert_weights_close(kiln_model, keras_model, f"after step {step + 1}")
    kiln_eval = kiln_model.evaluate(x, y, verbose=0)
    assert kiln_eval == pytest.approx(float(keras_model.evaluate(x, y, verbose=0)),
                                      rel=RTOL, abs=ATOL)


def test_a_train_step_override_is_refused_naming_compute_loss():
    class Custom(kk.Model):
        def __init__(self):
            super().__init__()
            self.dense = kk.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            raise AssertionError("never run")

    with pytest.raises(NotImplementedError, match=r"train_step\(\).*Override compute_loss"):
        Custom().compile(optimizer="sgd", loss="mse")


def test_compute_loss_may_only_add_tensors_to_the_compiled_loss():
    class Scaled(kk.Model):
        def __init__(self):
            super().__init__()
            self.dense = kk.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            return super().compute_loss(x, y, y_pred, sample_weight, training).numpy() * 2

    model = Scaled()
    model.build((None, 3))
    with pytest.raises(NotImplementedError, match=r"compute_loss used \.numpy"):
        model.compile(optimizer="sgd", loss="mse")
