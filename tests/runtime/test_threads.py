"""Threads: numba's kernels follow OMP_NUM_THREADS, and a model trained with two threads
holds the weights one thread gives (the parallel kernels split rows, never change the math).

The suite's workers run one thread each (tests/conftest.py), so the two-thread paths of the
kernels (per-thread scratch rows, split batches) are exercised here, in subprocesses."""

import json
import os
import subprocess
import sys

import numpy as np

TRAIN = r"""
import json, sys
import numpy as np
from kiln import keras
from kiln.keras import layers
from kiln.ops import numba_config

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
images = rng.normal(size=(32, 8, 8, 3)).astype(np.float32)
tokens = rng.integers(0, 9, (32, 6))
tokens[:4, 4:] = 0  # masked steps
labels = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]

image_in = keras.Input((8, 8, 3))
x = layers.Conv2D(8, 3, padding="same", activation="relu")(image_in)
x = layers.BatchNormalization()(x)
x = layers.MaxPooling2D()(x)
x = layers.Dropout(0.25)(x)
x = layers.Dense(8)(layers.Flatten()(x))
token_in = keras.Input((6,), dtype="int32")
s = layers.Embedding(9, 4, mask_zero=True)(token_in)
s = layers.LSTM(5, dropout=0.2, recurrent_dropout=0.2)(s)
x = layers.concatenate([x, s])
out = layers.Dense(3, activation="softmax")(layers.Dense(16, activation="relu")(x))
model = keras.Model([image_in, token_in], out)
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="categorical_crossentropy")
model.fit([images, tokens], labels, batch_size=16, epochs=2, shuffle=False, verbose=0)
print(json.dumps({"threads": numba_config.numba.get_num_threads(),
                  "weights": [w.tolist() for w in model.get_weights()]}))
"""


def run(code, **env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    environment.update(env)
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_numba_follows_omp_num_threads_unless_set():
    code = ("import json; from kiln.ops import numba_config as c; "
            "print(json.dumps({'threads': c.THREADS}))")
    assert run(code, OMP_NUM_THREADS="1")["threads"] == 1
    assert run(code, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="2")["threads"] == 2


def test_two_threads_train_the_weights_one_thread_gives():
    one = run(TRAIN, OMP_NUM_THREADS="1")
    two = run(TRAIN, OMP_NUM_THREADS="2")
    assert (one["threads"], two["threads"]) == (1, 2)
    for a, b in zip(one["weights"], two["weights"], strict=True):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-4, atol=1e-6)
