"""Compile and cache kiln's numba kernels ahead of the first fit().

`python -m kiln.runtime.warmup` trains a tiny model for one step with each optimizer (and
with bf16 where the CPU has it), which compiles every kernel signature a plan uses into
numba's on-disk cache. Without it, the very first fit() after an install spends about 2 s
compiling; with it, fit() reaches its first step in well under a second. `make` runs it
after installing.
"""

import time
import warnings

import numpy as np


def warm_up():
    from ..keras import Sequential, mixed_precision, optimizers
    from ..keras.layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D

    rng = np.random.default_rng(0)
    x = rng.random((4, 6, 6, 1), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 0, 1]]
    policies = ["float32"] + (["mixed_bfloat16"] if mixed_precision.native_bf16() else [])
    for policy in policies:
        mixed_precision.set_global_policy(policy)
        # one per update kernel (AdamW shares Adam's); clipnorm compiles the norm reduction
        for optimizer in (optimizers.SGD(momentum=0.9), optimizers.RMSprop(),
                          optimizers.RMSprop(momentum=0.5, centered=True),
                          optimizers.Adadelta(), optimizers.Adam(clipnorm=1.0),
                          optimizers.Nadam(), optimizers.Adamax(), optimizers.Adagrad(),
                          optimizers.Lion()):
            # pooling + dropout (fused in f32) and a dropout after a dense layer (separate)
            model = Sequential([Conv2D(16, (3, 3), activation="relu", input_shape=(6, 6, 1)),
                                MaxPooling2D(), Dropout(0.5), Flatten(),
                                Dense(8, activation="relu"), Dropout(0.5),
                                Dense(2, activation="softmax")])
            model.compile(loss="categorical_crossentropy", optimizer=optimizer,
                          metrics=["accuracy"])
            model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    mixed_precision.set_global_policy("float32")
    _warm_up_augmentation(model, x, y)


def _warm_up_augmentation(model, x, y):
    """ImageDataGenerator's kernels (the affine path, the shift path, normalization) and the
    per-batch checks of batches from a generator or PyDataset: 10-25 s to compile, which would
    otherwise land in the first augmented epoch."""
    from ..keras.preprocessing.image import ImageDataGenerator
    for settings in (dict(rotation_range=10, horizontal_flip=True, channel_shift_range=0.1),
                     dict(width_shift_range=0.1, height_shift_range=0.1, rescale=0.5,
                          samplewise_center=True, samplewise_std_normalization=True)):
        flow = ImageDataGenerator(**settings).flow(x, y, batch_size=4, seed=0)
        model.fit(flow, epochs=1, verbose=0)


if __name__ == "__main__":
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up()
    print(f"kiln: kernels compiled and cached in {time.perf_counter() - start:.1f} s")
