"""The cost of real-time augmentation in a training epoch: the classic cifar10_cnn trained for
one epoch on arrays (`fit`) and one epoch on `ImageDataGenerator.flow` batches with the
example's transforms (`fit_generator(..., workers=4)`), alternating, on the same synthetic
CIFAR-sized data. The augmentation runs in worker threads with compiled kernels while the
step runs; the ratio says how much of it the step does not hide."""

import time

import numpy as np

from .. import keras
from ..keras.preprocessing.image import ImageDataGenerator
from . import models


def example_generator():
    """cifar10_cnn.py's ImageDataGenerator (shifts of 0.1, horizontal flips, nearest fill)."""
    return ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
                              horizontal_flip=True, fill_mode="nearest")


def epoch_seconds(samples=3200, rounds=3, data_format="channels_last", seed=0):
    """(median seconds of a plain epoch, of an augmented epoch) over `rounds` alternations,
    after one untimed epoch of each (plan building, kernel loading)."""
    keras.utils.set_random_seed(seed)
    model, shape, batch = models.cifar10_cnn(data_format)
    rng = np.random.default_rng(seed)
    x = rng.random((samples, *shape), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, samples)]
    datagen = example_generator()
    if data_format == "channels_first":
        datagen = ImageDataGenerator(width_shift_range=0.1, height_shift_range=0.1,
                                     horizontal_flip=True, fill_mode="nearest",
                                     data_format="channels_first")
    datagen.fit(x)

    def plain():
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0)

    def augmented():
        model.fit_generator(datagen.flow(x, y, batch_size=batch), epochs=1, verbose=0,
                            workers=4)

    plain()
    augmented()
    times = {"plain": [], "augmented": []}
    for _ in range(rounds):
        for name, run in (("plain", plain), ("augmented", augmented)):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return float(np.median(times["plain"])), float(np.median(times["augmented"]))
