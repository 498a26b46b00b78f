"""predict / evaluate / fit of one model from several threads: each call gets the numbers a
single thread gets (the plans of a model run one at a time, under its plan cache's lock;
oneDNN releases the GIL, so without the lock threads overwrite each other's buffers)."""

import threading

import numpy as np
import pytest

from kiln import keras
from kiln.keras import layers

THREADS = 8
REPEATS = 20


def small_cnn(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((12, 12, 3)),
                              layers.Conv2D(8, 3, activation="relu"),
                              layers.MaxPooling2D(),
                              layers.Flatten(),
                              layers.Dense(5)])
    model.compile(loss="mse", optimizer=keras.optimizers.SGD(0.05), metrics=["mae"])
    return model


def batches(count, seed, samples=32):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((samples, 12, 12, 3)).astype(np.float32),
             rng.standard_normal((samples, 5)).astype(np.float32)) for _ in range(count)]


def run_threads(work, count=THREADS):
    """Runs work(index) in `count` threads started together; re-raises the first error."""
    errors = []
    barrier = threading.Barrier(count)

    def target(index):
        try:
            barrier.wait()
            work(index)
        except BaseException as error:  # reported in the test thread
            errors.append(error)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def test_predict_from_many_threads_matches_one_thread():
    model = small_cnn(0)
    data = batches(THREADS, seed=1)
    # a final partial batch too (16 + 16 + 0 of 32: two plans per call)
    expected = [model.predict(x, batch_size=24, verbose=0) for x, _ in data]
    wrong = []

    def work(index):
        x = data[index][0]
        for _ in range(REPEATS):
            got = model.predict(x, batch_size=24, verbose=0)
            if not np.allclose(got, expected[index], rtol=1e-6, atol=1e-6):
                wrong.append(index)

    run_threads(work)
    assert not wrong, f"{len(wrong)} of {THREADS * REPEATS} predictions differ from one thread's"


def test_evaluate_from_many_threads_matches_one_thread():
    model = small_cnn(2)
    data = batches(THREADS, seed=3)
    expected = [model.evaluate(x, y, batch_size=24, verbose=0, return_dict=True)
                for x, y in data]
    wrong = []

    def work(index):
        x, y = data[index]
        for _ in range(REPEATS // 2):
            got = model.evaluate(x, y, batch_size=24, verbose=0, return_dict=True)
            if got.keys() != expected[index].keys() or not all(
                    np.isclose(got[k], expected[index][k], rtol=1e-6) for k in got):
                wrong.append((index, got))

    run_threads(work)
    assert not wrong, f"{len(wrong)} evaluations differ from one thread's, e.g. {wrong[0]}"


def test_two_models_interleaved_across_threads():
    models = [small_cnn(4), small_cnn(5)]
    data = batches(4, seed=6)
    expected = [[m.predict(x, verbose=0) for x, _ in data] for m in models]
    wrong = []

    def work(index):
        x = data[index % 4][0]
        for repeat in range(REPEATS):
            which = (index + repeat) % 2
            got = models[which].predict(x, verbose=0)
            if not np.allclose(got, expected[which][index % 4], rtol=1e-6, atol=1e-6):
                wrong.append((index, which))

    run_threads(work)
    assert not wrong, f"{len(wrong)} predictions differ from one thread's"


def test_predict_during_fit_sees_the_weights_of_some_step():
    model = small_cnn(7)
    (x, y), (probe, _) = batches(2, seed=8, samples=64)
    model.predict(probe, verbose=0)  # the inference plan exists before training starts
    snapshots = [model.get_weights()]

    class Snapshot(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            snapshots.append(self.model.get_weights())

    predictions, done = [], threading.Event()

    def predict_until_done():
        while not done.is_set():
            predictions.append(model.predict(probe, batch_size=64, verbose=0))

    predictor = threading.Thread(target=predict_until_done)
    predictor.start()
    try:
        history = model.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0,
                            callbacks=[Snapshot()])
    finally:
        done.set()
        predictor.join()
    assert len(snapshots) == 1 + 3 * 8 and predictions
    # training was not disturbed: the same fit in one thread gives the same losses
    alone = small_cnn(7)
    alone_history = alone.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], alone_history.history["loss"],
                               rtol=1e-5)
    # every prediction is the model's output for the weights after one of the steps
    reference = small_cnn(7)
    references = []
    for weights in snapshots:
        reference.set_weights(weights)
        references.append(reference.predict(probe, batch_size=64, verbose=0))
    stray = [i for i, got in enumerate(predictions)
             if not any(np.allclose(got, ref, rtol=1e-5, atol=1e-5) for ref in references)]
    assert not stray, (f"{len(stray)} of {len(predictions)} predictions made during fit match "
                       "no step's weights")


@pytest.mark.parametrize("first", ["predict", "evaluate"])
def test_first_calls_from_many_threads_build_one_plan(first, monkeypatch):
    from kiln.keras.models import model as model_module

    model = small_cnn(9)
    x, y = batches(1, seed=10)[0]
    built = []

    def counting_plan(*args, **kwargs):
        built.append(args[1])  # the batch size
        return plan_class(*args, **kwargs)

    plan_class = model_module.StepPlan
    monkeypatch.setattr(model_module, "StepPlan", counting_plan)

    def work(index):
        if first == "predict":
            model.predict(x, batch_size=32, verbose=0)
        else:
            model.evaluate(x, y, batch_size=32, verbose=0)

    run_threads(work)
    assert built == [32]
