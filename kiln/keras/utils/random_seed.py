"""keras.utils.set_random_seed: one call that fixes every random draw of a kiln run.

kiln draws all its randomness from three places, each seeded here:
- Python's `random` (user code, Keras habits),
- numpy's global generator: the shuffling order of fit (arrays and PyDataset batch order),
  ImageDataGenerator iterators' seeds (each batch's augmentation then comes from a generator
  keyed by that seed, the epoch and the batch index, so worker threads cannot reorder draws),
  and the seed of a dropout op built without one,
- kiln's initializer generator: initial weights and the dropout seed of each Dropout layer.
Dropout masks are a hash of (seed, step, element), not a stateful stream, so with the seeds
fixed two runs of one script on the same machine and thread count give bit-identical weights.
"""

import random

import numpy as np

from .. import initializers


def set_random_seed(seed):
    """Seeds Python's `random`, numpy's global generator and kiln's own generators.

    Call it before building the model: the layers draw their weights and dropout seeds when
    they are built. As in Keras, the same seed in the same script (same machine, same number
    of threads) reproduces the run bit for bit: weights, shuffling, dropout and augmentation.

    Args:
        seed: an int in [0, 2**32).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) \
            or not 0 <= seed < 2**32:
        raise ValueError(f"set_random_seed: argument seed must be an int in [0, 2**32), got "
                         f"{seed!r}")
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed)
    initializers.set_random_seed(seed)
