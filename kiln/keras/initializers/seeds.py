"""Where kiln's random draws start: one generator, seeded by `keras.utils.set_random_seed`.

Keras 3 gives an unseeded initializer a seed of its own when it is made
(`random.make_default_seed()`, from Python's `random`) and draws with it on every call, so
the same instance returns the same values each time. kiln does the same, with the default
seed drawn from this generator, so `set_random_seed(s)` before building a model reproduces its
weights. Dropout and the noise layers draw their seeds here too.
"""

import numpy as np

# a list so that modules holding `_generator` see a reseeded generator
_generator = [np.random.default_rng()]


def set_random_seed(seed):
    """Seed the generator used by initializers (and by Dropout layers created afterwards)."""
    _generator[0] = np.random.default_rng(seed)
    np.random.seed(seed)


def default_seed():
    """A seed for an initializer made without one, in Keras's range [1, 1e9]."""
    return int(_generator[0].integers(1, 10**9, endpoint=True))
