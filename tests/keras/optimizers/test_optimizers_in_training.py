"""Optimizers inside kiln's training plans: trained weights equal real Keras's for the
options that change the per-step arithmetic (per-weight and global clipping, schedules, weight
decay), the learning rate follows a schedule and takes assignments between fits, training
resumes bit for bit from get_state/set_state, and freezing a layer keeps the others' slots."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras checker
import keras_oracle  # noqa: E402  (sets KERAS_BACKEND before Keras is imported)

from kiln import keras as kk  # noqa: E402
from kiln.keras import backend  # noqa: E402
from kiln.keras.utils import to_categorical  # noqa: E402

pytestmark = pytest.mark.usefixtures("kiln_keras_env")


def small_cnn(K):
    return K.Sequential([K.Input((6, 6, 2)),
                         K.layers.Conv2D(4, 3, activation="relu"),
                         K.layers.Flatten(),
                         K.layers.Dense(8, activation="tanh"),
                         K.layers.Dense(3, activation="softmax")])


OPTIMIZERS = {
    "adam-clipnorm-amsgrad": lambda K: K.optimizers.Adam(0.01, clipnorm=0.05, amsgrad=True),
    "rmsprop-centered-global_clipnorm": lambda K: K.optimizers.RMSprop(
        0.01, momentum=0.5, centered=True, global_clipnorm=0.1),
    "sgd-nesterov-schedule-weight_decay": lambda K: K.optimizers.SGD(
        K.optimizers.schedules.PiecewiseConstantDecay([1], [0.5, 0.1]), momentum=0.9,
        nesterov=True, weight_decay=0.05),
    "nadam-clipvalue": lambda K: K.optimizers.Nadam(0.01, clipvalue=0.01),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_trained_weights_equal_keras(name):
    kiln_model, _, _ = keras_oracle.build_pair(small_cnn)
    kiln_model, keras_model = keras_oracle.check_training(
        small_cnn, OPTIMIZERS[name], kiln_model.get_weights(), steps=3)
    assert int(kiln_model.optimizer.iterations) == int(keras_model.optimizer.iterations) == 3


def data(count=12, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count, 6, 6, 2)).astype(np.float32)
    return x, to_categorical(rng.integers(0, 3, count), 3)


def test_schedule_and_assignments_between_fits_take_effect():
    x, y = data()
    schedule = kk.optimizers.schedules.ExponentialDecay(0.1, decay_steps=3, decay_rate=0.5)
    model = small_cnn(kk)
    model.compile(loss="categorical_crossentropy",
                  optimizer=kk.optimizers.SGD(schedule, momentum=0.9))
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)  # 3 batches per epoch
    assert int(model.optimizer.iterations) == 6
    assert float(model.optimizer.learning_rate) == pytest.approx(float(schedule(6)))

    plain = small_cnn(kk)
    plain.compile(loss="categorical_crossentropy", optimizer=kk.optimizers.SGD(0.1))
    plain.fit(x, y, batch_size=12, epochs=1, verbose=0)
    backend.set_value(plain.optimizer.lr, 0.0)  # Keras 2 style: no step moves anything now
    frozen = plain.get_weights()
    plain.fit(x, y, batch_size=12, epochs=2, verbose=0)
    for before, after in zip(frozen, plain.get_weights(), strict=True):
        np.testing.assert_array_equal(after, before)
    plain.optimizer.learning_rate = 0.2  # Keras 3 style: the next step uses it
    weights = plain.get_weights()
    plain.fit(x, y, batch_size=12, epochs=1, verbose=0)
    reference = small_cnn(kk)
    reference.compile(loss="categorical_crossentropy", optimizer=kk.optimizers.SGD(0.2))
    reference.set_weights(weights)
    reference.fit(x, y, batch_size=12, epochs=1, verbose=0)
    for got, expected, before in zip(plain.get_weights(), reference.get_weights(), weights,
                                     strict=True):
        assert np.abs(got - before).max() > 1e-3
        # two models' plans may sum gradients in different orders: a few ulps apart
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: kk.optimizers.Adam(0.01, clipnorm=0.1),
    lambda: kk.optimizers.Nadam(0.01, weight_decay=0.01),
    lambda: kk.optimizers.RMSprop(0.01, centered=True, momentum=0.5, global_clipnorm=0.5),
    lambda: kk.optimizers.Adagrad(0.05),
], ids=["adam", "nadam", "rmsprop", "adagrad"])
def test_training_resumes_bit_for_bit_from_state(make):
    """3 steps == 2 steps, then weights and optimizer state into a fresh model, 1 step."""
    x, y = data()
    straight = small_cnn(kk)
    start = straight.get_weights()
    straight.compile(loss="categorical_crossentropy", optimizer=make())
    straight.fit(x, y, batch_size=12, epochs=3, verbose=0, shuffle=False)

    first = small_cnn(kk)
    first.set_weights(start)
    first.compile(loss="categorical_crossentropy", optimizer=make())
    first.fit(x, y, batch_size=12, epochs=2, verbose=0, shuffle=False)
    state = first.optimizer.get_state()
    assert int(state["iterations"]) == 2 and len(state) > 2
    second = small_cnn(kk)
    second.set_weights(first.get_weights())
    second.compile(loss="categorical_crossentropy", optimizer=make())
    second.optimizer.set_state(state)
    second.fit(x, y, batch_size=12, epochs=1, verbose=0, shuffle=False)
    for got, expected in zip(second.get_weights(), straight.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)
    for key, value in straight.optimizer.get_state().items():
        np.testing.assert_array_equal(second.optimizer.get_state()[key], value, err_msg=key)


def test_freezing_a_layer_keeps_the_other_weights_moments():
    """Freezing the first Dense repacks the arena; the last layer's Adam momentum must carry
    over: after one more step it is 0.9 * its old value + 0.1 * the new gradient."""
    x, y = data()
    model = small_cnn(kk)
    model.compile(loss="categorical_crossentropy", optimizer=kk.optimizers.Adam(0.01))
    model.fit(x, y, batch_size=12, epochs=2, verbose=0, shuffle=False)
    store = model.store
    last = [name for name, _, _ in store.trainable_segments()][-1]
    start, stop = {n: (a, b) for n, a, b in store.trainable_segments()}[last]
    momentum_before = model.optimizer.get_state()["momentum"][start:stop].copy()
    model.layers[2].trainable = False
    model.compile(loss="categorical_crossentropy", optimizer=model.optimizer)
    model.fit(x, y, batch_size=12, epochs=1, verbose=0, shuffle=False)
    start, stop = {n: (a, b) for n, a, b in store.trainable_segments()}[last]
    assert len(store.trainable_segments()) == 4
    grad = store.grads_arena[start:stop]
    expected = 0.9 * momentum_before + 0.1 * grad
    np.testing.assert_allclose(model.optimizer.get_state()["momentum"][start:stop], expected,
                               rtol=1e-5, atol=1e-8)


def test_compile_by_name_counts_iterations_per_batch():
    x, y = data(10)
    model = small_cnn(kk)
    model.compile(loss="categorical_crossentropy", optimizer="adamw")
    assert isinstance(model.optimizer, kk.optimizers.AdamW) and model.optimizer.iterations == 0
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert model.optimizer.iterations == 6  # 3 batches (4 + 4 + 2) per epoch


def test_trainable_segments_tile_the_trainable_arena():
    """One segment per trainable weight, by path, in arena order, 64-byte aligned, at least
    the weight's size (blocked layouts pad with zeros), ending at trainable_size; a frozen
    layer's weights are not in it."""
    x, y = data()
    model = small_cnn(kk)
    model.layers[1].trainable = False  # the first Dense
    model.compile(loss="categorical_crossentropy", optimizer=kk.optimizers.SGD(0.1))
    model.fit(x, y, batch_size=12, epochs=1, verbose=0)
    segments = model.store.trainable_segments()
    sizes = {w.path: int(np.prod(w.shape)) for w in model.trainable_weights}
    assert sorted(name for name, _, _ in segments) == sorted(sizes)
    previous_stop = 0
    for name, start, stop in segments:
        assert start % 16 == 0 and start >= previous_stop and stop - start >= sizes[name]
        previous_stop = stop
    assert previous_stop == model.store.trainable_size
    assert segments is model.store.trainable_segments()  # the same tuple until a repack


def test_a_callable_learning_rate_is_called_each_step():
    rates = iter([0.5, 0.0, 0.0])
    optimizer = kk.optimizers.SGD(lambda: next(rates))  # Keras 3: a callable of no argument
    w, g = np.zeros(2, np.float32), np.ones(2, np.float32)
    updater = optimizer.make_updater()
    for _ in range(3):
        updater.apply(w, g)
    np.testing.assert_allclose(w, -0.5)
