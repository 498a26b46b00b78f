"""The cost of real-time augmentation in a training epoch, two ways, each against the same
model's epoch on plain arrays, alternating, on the same synthetic CIFAR-sized data:

- `epoch_seconds`: Keras 2's way. The classic cifar10_cnn on `ImageDataGenerator.flow`
  batches with the example's transforms (`fit_generator(..., workers=4)`): the augmentation
  runs in worker threads with compiled kernels while the step runs.
- `layer_epoch_seconds`: Keras 3's way (keras.io "Image classification from scratch"). The
  same small CNN with RandomFlip("horizontal"), RandomRotation(0.1) and RandomZoom(0.1) as its
  first layers, active in training only: planned kernels inside the training step.

The ratio says how much of the augmentation the step does not hide (target: within 10%)."""

import time

import numpy as np

from .. import keras
from ..keras.preprocessing.image import ImageDataGenerator
from . import models

AUGMENTATION_LAYERS = ('RandomFlip("horizontal")', "RandomRotation(0.1)", "RandomZoom(0.1)")


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


def augmentation_layers(data_format="channels_last", seed=0):
    """keras.io's data_augmentation layers: RandomFlip("horizontal"), RandomRotation(0.1),
    RandomZoom(0.1), seeded."""
    layers = keras.layers
    f = dict(data_format=data_format)
    return [layers.RandomFlip("horizontal", seed=seed, **f),
            layers.RandomRotation(0.1, seed=seed + 1, **f),
            layers.RandomZoom(0.1, seed=seed + 2, **f)]


def small_cnn(data_format="channels_last", augment=False, seed=0):
    """models.cifar10_cnn's layers and compile arguments (batch 32), with the augmentation
    layers first when `augment`: (model, image shape, batch)."""
    plain, shape, batch = models.cifar10_cnn(data_format)
    layers = (augmentation_layers(data_format, seed) if augment else []) + list(plain.layers)
    model = keras.Sequential([keras.Input(shape), *layers])
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.RMSprop(learning_rate=1e-4), metrics=["accuracy"])
    return model, shape, batch


def layer_epoch_seconds(samples=3200, rounds=3, data_format="channels_last", seed=0):
    """(median seconds of a plain epoch, of an epoch of the same CNN with the augmentation
    layers in the model) over `rounds` alternations (the order swapped every round), both
    fit() on the same arrays, after one untimed epoch of each (plan building, kernel
    loading)."""
    keras.utils.set_random_seed(seed)
    plain_model, shape, batch = small_cnn(data_format)
    augmented_model, _, _ = small_cnn(data_format, augment=True, seed=seed)
    rng = np.random.default_rng(seed)
    x = rng.random((samples, *shape), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, samples)]
    runs = {name: (lambda m=model: m.fit(x, y, batch_size=batch, epochs=1, verbose=0))
            for name, model in (("plain", plain_model), ("augmented", augmented_model))}
    for run in runs.values():
        run()
    times = {"plain": [], "augmented": []}
    for index in range(rounds):  # ABBA: a drift of the machine's load favours neither
        for name, run in list(runs.items())[::-1 if index % 2 else 1]:
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return float(np.median(times["plain"])), float(np.median(times["augmented"]))
