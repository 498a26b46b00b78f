"""The scripts the data-parallel tests run on two ranks (and in one process, for reference).

    mpiexec -n 2 python data_parallel_script.py <scenario> <output folder>

scenarios: `train` (a Sequential CNN, then evaluate, predict and files; a model with
BatchNormalization, and the same with synchronized statistics), `raise` / `kill` (rank 1
fails at its third step), `mismatch` (rank 1 has another kiln version, model and batch size).
"""

import os
import signal
import sys

import numpy as np

from kiln import keras
from kiln.keras.layers import BatchNormalization, Conv2D, Dense, Flatten, MaxPooling2D

SAMPLES = 69  # 64 + a last global batch of 5: shards of 3 and 2 rows
BATCH = 16


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((SAMPLES, 8, 8, 3)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, SAMPLES)]
    return x, y


def cnn(filters=4):
    return keras.Sequential([Conv2D(filters, 3, activation="relu", input_shape=(8, 8, 3)),
                             MaxPooling2D(2), Flatten(), Dense(4, activation="softmax")])


def batch_norm_model(synchronized=False):
    inputs = keras.Input((8, 8, 3))
    x = Conv2D(4, 3, use_bias=False)(inputs)
    x = BatchNormalization(synchronized=synchronized)(x)
    x = keras.layers.Activation("relu")(x)
    outputs = Dense(4, activation="softmax")(Flatten()(x))
    return keras.Model(inputs, outputs)


def train_cnn(callbacks=(), batch_size=BATCH, filters=4):
    """The CNN trained for two shuffled epochs; returns (model, history)."""
    keras.utils.set_random_seed(3)
    model = cnn(filters)
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    x, y = data()
    history = model.fit(x, y, batch_size=batch_size, epochs=2, shuffle=True, verbose=0,
                        callbacks=list(callbacks))
    return model, history


def train_batch_norm(synchronized=False):
    keras.utils.set_random_seed(4)
    model = batch_norm_model(synchronized)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    x, y = data(1)
    model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=True, verbose=0)
    return model


def save(path, model, **extra):
    arrays = {f"w{i}": w for i, w in enumerate(model.get_weights())}
    np.savez(path, **arrays, **extra)


def main(scenario, folder):
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    rank = keras.distribution.distribution().rank
    if scenario == "train":
        checkpoint = keras.callbacks.ModelCheckpoint(os.path.join(folder, "cnn.keras"))
        log = keras.callbacks.CSVLogger(os.path.join(folder, "log.csv"))
        x, y = data()
        # an evaluate inside fit (a callback's) must leave the gradient sums on
        peek = keras.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: peek.model.evaluate(x, y, verbose=0))
        model, history = train_cnn([checkpoint, log, peek])
        evaluated = model.evaluate(x, y, batch_size=BATCH, verbose=0)
        predicted = model.predict(x, batch_size=BATCH)
        save(os.path.join(folder, f"cnn_rank{rank}.npz"), model,
             loss=np.array(history.history["loss"]),
             accuracy=np.array(history.history["accuracy"]),
             evaluated=np.array(evaluated), predicted=predicted)
        save(os.path.join(folder, f"bn_rank{rank}.npz"), train_batch_norm())
        save(os.path.join(folder, f"sync_bn_rank{rank}.npz"), train_batch_norm(True))
    elif scenario in ("raise", "kill"):
        with open(os.path.join(folder, f"pid{rank}"), "w") as file:  # mpiexec names pids
            file.write(str(os.getpid()))

        def fail(batch, logs):
            if rank == 1 and batch == 2:
                if scenario == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError("injected failure at step 3")
        train_cnn([keras.callbacks.LambdaCallback(on_train_batch_end=fail)])
    elif scenario == "mismatch":  # rank 1: another kiln version, model and batch size
        if rank == 1:
            from kiln.keras.distribution import data_parallel_loop

            data_parallel_loop.__version__ = "0.0.0"
        train_cnn(batch_size=BATCH if rank == 0 else BATCH // 2,
                  filters=4 if rank == 0 else 5)
    else:
        raise ValueError(f"unknown scenario {scenario!r}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
