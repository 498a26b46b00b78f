"""steps_per_epoch and validation_steps shorter (or longer) than the data, against Keras 3.

Keras keeps its pass over the training data across epochs: with 5 batches and
steps_per_epoch=2 the epochs see batches [0, 1], [2, 3], [4] (cut short, with a warning) and
then [0, 1] of a new pass. A generator is never restarted: once it ran out, each new pass
replays the two batches Keras peeked at. Validation starts a new pass at every validation
run. Each case runs the same fit on both sides, from the same weights, with sources that log
what is fetched (and a PyDataset's on_epoch_begin / on_epoch_end) between the epochs, and
must give the same log, the same 'ran out of data' warnings, the same history and the same
weights after every epoch.
"""

import random
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from keras_oracle import RTOL, build_pair, real_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

DATA = np.random.default_rng(3)
X = DATA.standard_normal((10, 3)).astype(np.float32)  # 5 batches of 2
Y = DATA.standard_normal((10, 2)).astype(np.float32)


def build(K):
    inputs = K.Input((3,))
    return K.Model(inputs, K.layers.Dense(2)(inputs))


def logging_dataset(K, log, tag, batches=5, **kwargs):
    class Logged(K.utils.PyDataset):
        def __len__(self):
            return batches

        def __getitem__(self, index):
            log.append((tag, index))
            return X[2 * index:2 * index + 2], Y[2 * index:2 * index + 2]

        def on_epoch_begin(self):
            log.append((tag, "on_epoch_begin"))

        def on_epoch_end(self):
            log.append((tag, "on_epoch_end"))
    return Logged(**kwargs)


def logging_generator(log, tag, batches=5):
    for index in range(batches):
        log.append((tag, index))
        yield X[2 * index:2 * index + 2], Y[2 * index:2 * index + 2]


def seeded(seed, args):
    """Both RNGs Keras shuffles with (numpy for arrays, `random` for a PyDataset)."""
    np.random.seed(seed)
    random.seed(seed)
    return args


CASES = {
    "arrays": lambda K, log: dict(x=X, y=Y, batch_size=2, steps_per_epoch=2, epochs=4),
    "arrays_shuffled": lambda K, log: seeded(5, dict(x=X, y=Y, batch_size=2, steps_per_epoch=2,
                                                     epochs=4, shuffle=True)),
    "arrays_shuffled_by_batch": lambda K, log: seeded(6, dict(
        x=X, y=Y, batch_size=3, steps_per_epoch=2, epochs=3, shuffle="batch")),
    "arrays_steps_past_the_data": lambda K, log: dict(x=X, y=Y, batch_size=2,
                                                      steps_per_epoch=7, epochs=2),
    "generator_running_out": lambda K, log: dict(x=logging_generator(log, "generator"),
                                                 steps_per_epoch=2, epochs=6),
    "generator_without_steps": lambda K, log: dict(x=logging_generator(log, "generator", 3),
                                                   epochs=3),
    "py_dataset": lambda K, log: dict(x=logging_dataset(K, log, "dataset"), steps_per_epoch=2,
                                      epochs=4),
    "py_dataset_shuffled": lambda K, log: seeded(7, dict(
        x=logging_dataset(K, log, "dataset"), steps_per_epoch=2, epochs=4, shuffle=True)),
    "validation_arrays": lambda K, log: dict(x=X[:2], y=Y[:2], batch_size=2, epochs=3,
                                             validation_data=(X, Y), validation_steps=2),
    "validation_generator": lambda K, log: dict(
        x=X[:2], y=Y[:2], batch_size=2, epochs=3,
        validation_data=logging_generator(log, "validation"), validation_steps=3),
    "validation_py_dataset": lambda K, log: dict(
        x=X[:2], y=Y[:2], batch_size=2, epochs=3, validation_steps=2,
        validation_data=logging_dataset(K, log, "validation")),
}


def run(K, model, case):
    """(log, 'ran out' warnings, history, weights after each epoch) of the case's fit."""
    log, weights = [], []
    callback = K.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: log.append(("epoch", epoch)),
        on_epoch_end=lambda epoch, logs: weights.append(model.get_weights()),
        on_test_begin=lambda logs: log.append(("validation run",)))
    model.compile(optimizer=K.optimizers.SGD(learning_rate=0.1), loss="mse")
    args = dict(shuffle=False, verbose=0, callbacks=[callback])
    args.update(CASES[case](K, log))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(**args).history
    ran_out = [str(w.message) for w in caught if "ran out of data" in str(w.message)]
    return log, ran_out, history, weights


@pytest.mark.parametrize("case", sorted(CASES))
def test_fit_sees_the_batches_keras_sees(case):
    keras = real_keras()
    kiln_model, keras_model, _ = build_pair(build)
    ours = run(kk, kiln_model, case)
    theirs = run(keras, keras_model, case)
    assert ours[0] == theirs[0], "what the sources were asked for, between the epochs"
    assert ours[1] == theirs[1], "the 'ran out of data' warnings"
    assert sorted(ours[2]) == sorted(theirs[2])
    for name in theirs[2]:
        np.testing.assert_allclose(ours[2][name], theirs[2][name], rtol=RTOL, atol=1e-5,
                                   err_msg=f"history {name}")
    assert len(ours[3]) == len(theirs[3])
    for epoch, (kiln_weights, keras_weights) in enumerate(zip(ours[3], theirs[3])):
        for kiln_value, keras_value in zip(kiln_weights, keras_weights, strict=True):
            np.testing.assert_allclose(kiln_value, keras_value, rtol=RTOL, atol=1e-5,
                                       err_msg=f"weights after epoch {epoch + 1}")
