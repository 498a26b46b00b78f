"""Model._sync before every step (weight_sync.py): one walk over the layers, the weights list
only made when a weight has to move, and what it decides unchanged: a layer frozen or
thawed by a callback between two batches takes effect at the next batch, a layer shared with
another model moves to the model that runs."""

import numpy as np
import pytest

from kiln import keras as kk
from kiln.keras.models.model import Model

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

X = np.random.default_rng(0).normal(size=(32, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(32, 2)).astype(np.float32)


def model():
    kk.utils.set_random_seed(1)
    inputs = kk.Input((4,))
    hidden = kk.layers.Dense(3, name="first")(inputs)
    built = kk.Model(inputs, kk.layers.Dense(2, name="second")(hidden))
    built.compile(optimizer="sgd", loss="mse")
    return built


def test_fit_does_not_list_the_weights_every_step(monkeypatch):
    trained = model()
    trained.fit(X, Y, batch_size=4, epochs=1, verbose=0)  # plans built
    reads = []
    original = Model.weights

    def counted(self):
        reads.append(1)
        return original.fget(self)
    monkeypatch.setattr(Model, "weights", property(counted))
    trained.fit(X, Y, batch_size=4, epochs=2, verbose=0)  # 16 steps
    assert len(reads) <= 2


class FreezeAt(kk.callbacks.Callback):
    """Freezes layer `first` after batch 1 and thaws it after batch 3, recording its kernel
    after every batch."""

    def __init__(self):
        super().__init__()
        self.kernels = []

    def on_train_batch_end(self, batch, logs=None):
        layer = self.model.get_layer("first")
        self.kernels.append(layer.get_weights()[0].copy())
        if batch == 1:
            layer.trainable = False
        if batch == 3:
            layer.trainable = True


def test_freezing_between_batches_takes_effect_at_the_next_batch():
    trained = model()
    recorder = FreezeAt()
    trained.fit(X, Y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=[recorder])
    k = recorder.kernels
    assert not np.array_equal(k[0], k[1])
    np.testing.assert_array_equal(k[1], k[2])  # frozen for batches 2 and 3
    np.testing.assert_array_equal(k[2], k[3])
    assert not np.array_equal(k[3], k[4])  # thawed again
    assert trained._trainable_flags == (("first/bias", True), ("first/kernel", True),
                                        ("second/bias", True), ("second/kernel", True))


def test_a_shared_layer_moves_to_the_model_that_runs():
    first = model()
    shared = first.get_layer("first")
    inputs = kk.Input((4,))
    other = kk.Model(inputs, kk.layers.Dense(2, name="other_head")(shared(inputs)))
    other.compile(optimizer="sgd", loss="mse")
    other.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    after_other = shared.get_weights()[0].copy()
    first.fit(X, Y, batch_size=8, epochs=1, verbose=0)  # starts from other's training
    assert all(w.store is first.store for w in shared.weights)
    moved = first.predict(X, verbose=0)
    # a fresh computation from the kernel other left and first's own training after it
    assert not np.array_equal(shared.get_weights()[0], after_other)
    kernel, bias = shared.get_weights()
    second_kernel, second_bias = first.get_layer("second").get_weights()
    np.testing.assert_allclose(moved, (X @ kernel + bias) @ second_kernel + second_bias,
                               rtol=1e-5, atol=1e-5)
