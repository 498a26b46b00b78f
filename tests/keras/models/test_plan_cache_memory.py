"""A model's memory stays bounded: it keeps its most recently used plans (each owns its whole
activation arena) instead of one per batch size ever seen, clear_session() frees them, and a
deleted model is collected.

The resident set is measured in a fresh process whose allocator returns every large block to
the system when it is freed (MALLOC_MMAP_THRESHOLD_), so that RSS follows what is alive rather
than what glibc keeps cached."""

import json
import os
import subprocess
import sys
from pathlib import Path

MEASURE = r"""
import gc, json, os, sys, weakref
import numpy as np
from kiln import keras
from kiln.keras import layers

def rss_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def cnn():
    model = keras.Sequential([keras.Input((24, 24, 1)),
                              layers.Conv2D(32, 3, padding="same", activation="relu"),
                              layers.MaxPooling2D(), layers.Flatten(), layers.Dense(4)])
    model.compile(loss="mse", optimizer="sgd")
    return model

x = np.random.default_rng(0).standard_normal((112, 24, 24, 1)).astype(np.float32)
y = np.zeros((112, 4), np.float32)
model = cnn()
model.fit(x[:16], y[:16], batch_size=8, verbose=0)  # compiles the kernels once
model.predict(x[:64], batch_size=64, verbose=0)
start = rss_mb()
sizes = []
for size in range(80, 112):  # each predict is one batch: a new plan per size
    model.predict(x[:size], batch_size=size, verbose=0)
    sizes.append(rss_mb() - start)
plans = len(model._plans)
keras.backend.clear_session()
cleared = rss_mb() - start
del model
gc.collect()
cycles, collected = [], []
for cycle in range(4):  # build, compile, fit (new batch sizes each time), predict, delete
    model = cnn()
    model.fit(x[:48], y[:48], batch_size=10 + cycle, epochs=1, verbose=0,
              validation_split=0.25)
    model.predict(x[:20], batch_size=7 + cycle, verbose=0)
    alive = weakref.ref(model)
    del model
    keras.backend.clear_session()
    collected.append(alive() is None)
    cycles.append(rss_mb() - start)
print(json.dumps({"sizes": sizes, "plans": plans, "cleared": cleared, "cycles": cycles,
                  "collected": collected}))
"""


def measure():
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", KILN_PLAN_CACHE_SIZE="4",
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", MEASURE], env=env, capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_rss_levels_off_over_batch_sizes_and_model_cycles():
    report = measure()
    sizes = report["sizes"]
    half = len(sizes) // 2
    first, second = sizes[half - 1], sizes[-1] - sizes[half - 1]
    # 32 batch sizes of 80-111 samples, 4 plans kept: the plans of the first half take their
    # room, the second half only swaps them for slightly larger ones (when every plan was
    # kept, the second half grew more than the first)
    assert second < 0.5 * first + 4, (first, second)
    assert report["plans"] == 4
    # clear_session() frees the plans; a model cycle leaves nothing behind
    assert report["cleared"] < 0.5 * sizes[-1], report
    assert all(report["collected"]), report
    cycles = report["cycles"]
    assert cycles[-1] - cycles[1] < 3, cycles
