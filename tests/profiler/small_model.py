"""A small conv model every profiler test uses: a Conv2D with its own relu, a Conv2D and an
Activation the plan fuses into it, max pooling, a view (Flatten) and a softmax Dense; an l2
penalty and a max-norm constraint so the update phase has all its parts."""

import numpy as np

from kiln import keras
from kiln.keras import layers

BATCH = 4
SHAPE = (8, 8, 2)
CLASSES = 3
# numbers the percentages are taken of, so the tests need not measure the machine
PEAKS = {"matmul_gflops": 10.0, "copy_gbps": 10.0}


def small_model(weights=None):
    model = keras.Sequential([
        layers.Conv2D(4, (3, 3), activation="relu", input_shape=SHAPE, name="conv_a",
                      kernel_regularizer=keras.regularizers.l2(1e-3)),
        layers.Conv2D(5, (3, 3), name="conv_b",
                      kernel_constraint=keras.constraints.MaxNorm(0.2)),
        layers.Activation("relu", name="relu_b"),
        layers.MaxPooling2D((2, 2), name="pool"),
        layers.Flatten(name="flat"),
        layers.Dense(CLASSES, activation="softmax", name="out"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="categorical_crossentropy")
    if weights is not None:
        model.set_weights(weights)
    return model


def data(samples=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((samples, *SHAPE)).astype(np.float32)
    y = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, samples)]
    return x, y
