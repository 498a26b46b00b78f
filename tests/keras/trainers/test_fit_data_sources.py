"""fit / evaluate / predict on generators, PyDatasets and ImageDataGenerator iterators give
exactly what the same batches give as arrays; Keras 2's generator and one-batch methods; bad
data stops fit before the bad batch changes a weight."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.layers import Dense, Dropout, Flatten
from kiln.keras.preprocessing.image import ImageDataGenerator
from kiln.keras.utils import PyDataset

pytestmark = pytest.mark.usefixtures("kiln_keras_env")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((48, 4, 4, 1)).astype(np.float32)
Y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 48)]


def model(seed=1, dropout=0.0):
    keras.utils.set_random_seed(seed)
    net = keras.Sequential([Flatten(input_shape=(4, 4, 1)), Dense(8, activation="relu"),
                            Dropout(dropout), Dense(3, activation="softmax")])
    net.compile(optimizer=keras.optimizers.SGD(0.1), loss="categorical_crossentropy",
                metrics=["accuracy"])
    return net


class Batches(PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, index):
        part = slice(index * self.batch_size, (index + 1) * self.batch_size)
        return self.x[part].astype(np.float64), self.y[part]


def generator(epochs=100):
    for _ in range(epochs):
        for start in range(0, 48, 16):
            yield X[start:start + 16], Y[start:start + 16]


def weights_after(fit):
    net = model()
    history = fit(net)
    return [w.copy() for w in net.get_weights()], history


def assert_same_weights(a, b):
    for left, right in zip(a, b, strict=True):
        np.testing.assert_array_equal(left, right)


def test_generator_py_dataset_and_fit_generator_train_exactly_as_arrays():
    reference, history = weights_after(lambda n: n.fit(X, Y, batch_size=16, epochs=3,
                                                       shuffle=False, verbose=0))
    from_generator, gen_history = weights_after(lambda n: n.fit(
        generator(), steps_per_epoch=3, epochs=3, verbose=0))
    from_dataset, _ = weights_after(lambda n: n.fit(Batches(X, Y, 16, workers=2), epochs=3,
                                                    shuffle=False, verbose=0))
    with pytest.warns(DeprecationWarning, match="fit_generator is deprecated"):
        from_keras2, _ = weights_after(lambda n: n.fit_generator(
            Batches(X, Y, 16), epochs=3, shuffle=False, workers=3, verbose=0))
    for weights in (from_generator, from_dataset, from_keras2):
        assert_same_weights(weights, reference)
    assert gen_history.history["loss"] == history.history["loss"]


def test_flow_without_augmentation_trains_as_the_arrays_do():
    reference, _ = weights_after(lambda n: n.fit(X / 2, Y, batch_size=16, epochs=2,
                                                 shuffle=False, verbose=0))
    flow = ImageDataGenerator(rescale=0.5).flow(X, Y, batch_size=16, shuffle=False)
    trained, _ = weights_after(lambda n: n.fit(flow, epochs=2, shuffle=False, verbose=0))
    assert_same_weights(trained, reference)


def test_evaluate_and_predict_on_generators_and_datasets():
    net = model()
    expected = net.evaluate(X, Y, batch_size=16, verbose=0)
    np.testing.assert_allclose(net.evaluate(Batches(X, Y, 16), verbose=0), expected,
                               rtol=1e-6)
    with pytest.warns(DeprecationWarning):
        np.testing.assert_allclose(net.evaluate_generator(generator(), steps=3), expected,
                                   rtol=1e-6)
    predictions = net.predict(X, batch_size=16)
    np.testing.assert_array_equal(net.predict(Batches(X, Y, 16)), predictions)
    np.testing.assert_array_equal(net.predict(generator(), steps=3), predictions)
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(net.predict_generator(Batches(X, Y, 16), workers=2),
                                      predictions)
    np.testing.assert_array_equal(net.predict_on_batch(X[:5]), predictions[:5])


def test_validation_data_may_be_a_py_dataset():
    net = model()
    history = net.fit(X, Y, batch_size=16, epochs=1, verbose=0,
                      validation_data=Batches(X[:16], Y[:16], 8))
    expected = model().evaluate(X[:16], Y[:16], verbose=0, return_dict=True)
    net2 = model()
    net2.fit(X, Y, batch_size=16, epochs=1, verbose=0)
    np.testing.assert_allclose(history.history["val_loss"][0],
                               net2.evaluate(X[:16], Y[:16], verbose=0, return_dict=True)
                               ["loss"], rtol=1e-6)
    assert expected  # the untrained model evaluates too


def test_train_and_test_on_batch_equal_one_fit_step_and_evaluate():
    reference = model()
    reference.fit(X[:16], Y[:16], batch_size=16, epochs=1, shuffle=False, verbose=0)
    net = model()
    loss, accuracy = net.train_on_batch(X[:16], Y[:16])
    assert_same_weights(net.get_weights(), reference.get_weights())
    logs = net.test_on_batch(X[16:32], Y[16:32], return_dict=True)
    expected = reference.evaluate(X[16:32], Y[16:32], batch_size=16, verbose=0,
                                  return_dict=True)
    assert logs.keys() == expected.keys()
    np.testing.assert_allclose(list(logs.values()), list(expected.values()), rtol=1e-6)
    assert np.isfinite(loss) and 0 <= accuracy <= 1


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.weights = None

    def on_train_batch_end(self, batch, logs=None):
        self.weights = [w.copy() for w in self.model.get_weights()]


def bad_generator(kind):
    for i, (x, y) in enumerate(generator()):
        if i == 7:  # epoch 3, batch 2
            x = x.copy()
            if kind == "nan":
                x[3, 1, 1, 0] = np.nan
            else:
                x = x[:, :3]
        yield x, y


@pytest.mark.parametrize("kind, pattern", [
    ("nan", r"fit: epoch 3, batch 2 of 3 from the generator: argument x holds nan at index "
            r"\(3, 1, 1, 0\) \(sample 3\)"),
    ("shape", r"epoch 3, batch 2 of 3 from the generator: argument x must have shape "
              r"\(batch, 4, 4, 1\) for data_format 'channels_last', got \(16, 3, 4, 1\)"),
])
def test_a_bad_batch_in_epoch_3_stops_fit_before_it_changes_a_weight(kind, pattern):
    net = model()
    recorder = Recorder()
    with pytest.raises(ValueError, match=pattern):
        net.fit(bad_generator(kind), steps_per_epoch=3, epochs=5, verbose=0,
                callbacks=[recorder])
    assert_same_weights(net.get_weights(), recorder.weights)
    reference = model()
    reference.fit(generator(), steps_per_epoch=7, epochs=1, verbose=0)  # the 7 good batches
    assert_same_weights(net.get_weights(), reference.get_weights())


@pytest.mark.parametrize("call, pattern", [
    (lambda n: n.fit(X, Y, batch_size=0, verbose=0),
     r"fit: argument batch_size must be a positive int, got 0"),
    (lambda n: n.fit(X[:0], Y[:0], verbose=0), r"fit: argument x is empty \(0 samples"),
    (lambda n: n.fit(np.where(np.arange(48)[:, None, None, None] == 5, np.inf, X), Y,
                     verbose=0), r"fit: argument x holds inf at index \(5, 0, 0, 0\)"),
    (lambda n: n.predict(X, batch_size=0), r"predict: argument batch_size must be a positive"),
])
def test_bad_arrays_are_refused_before_training(call, pattern):
    net = model()
    before = [w.copy() for w in net.get_weights()]
    with pytest.raises(ValueError, match=pattern):
        call(net)
    assert_same_weights(net.get_weights(), before)


def test_a_generator_that_runs_out_warns_and_fit_goes_on_as_in_keras():
    """6 batches, 3 a step: epoch 3 gets none, epochs 4 and 5 the two batches Keras peeked
    at (test_steps_per_epoch_against_keras.py checks the batches against Keras itself)."""
    net = model()
    with pytest.warns(UserWarning, match="^Your input ran out of data") as caught:
        history = net.fit(generator(epochs=2), steps_per_epoch=3, epochs=5, verbose=0)
    assert sum("ran out of data" in str(w.message) for w in caught) == 3
    losses = history.history["loss"]
    assert len(losses) == 5 and losses[2] == losses[1]  # an empty epoch logs the last one's


def test_augmented_fit_generator_with_four_workers_repeats_exactly_under_a_seed():
    """Worker threads finish batches in any order; the weights must not care."""
    def train():
        net = model(seed=3, dropout=0.25)
        datagen = ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
                                     horizontal_flip=True, rotation_range=10)
        with pytest.warns(DeprecationWarning):
            history = net.fit_generator(datagen.flow(X, Y, batch_size=8), epochs=2,
                                        validation_data=(X[:8], Y[:8]), workers=4,
                                        max_queue_size=3, verbose=0)
        return net.get_weights(), history.history
    (first, history), (second, _) = train(), train()
    assert_same_weights(first, second)
    assert len(history["val_loss"]) == 2 and np.isfinite(history["loss"]).all()
    unaugmented, _ = weights_after(lambda n: n.fit(X, Y, batch_size=8, epochs=2, verbose=0))
    assert not np.array_equal(first[0], unaugmented[0])


def test_on_epoch_end_runs_after_every_epoch_and_at_each_reset_as_in_keras():
    """Keras calls on_epoch_end after each epoch and when fit (and every validation run)
    starts; the first fit after compile also opens one epoch to build its losses."""
    class Counting(Batches):
        ends = 0

        def on_epoch_end(self):
            self.ends += 1
    train, validation = Counting(X, Y, 16), Counting(X[:16], Y[:16], 8)
    model().fit(train, epochs=3, validation_data=validation, verbose=0)
    assert (train.ends, validation.ends) == (1 + 3, 3 * 2)
