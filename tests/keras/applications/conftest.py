"""The applications tests' fixture `fast_keras_init`: real Keras, building models fast.

Keras draws each initial weight with its own JAX program (one compile per weight shape), which
made building EfficientNetB0 in Keras take most of a minute on a loaded machine. The tests
never use those values as such (the weights go through a file into kiln, or kiln's into
Keras), so the fixture draws them with numpy instead, with the same distributions.
"""

import numpy as np
import pytest
from keras_oracle import real_keras


@pytest.fixture
def fast_keras_init(monkeypatch):
    keras = real_keras()
    import jax.numpy as jnp
    from keras.src.backend.jax import random as jax_random

    rng = np.random.default_rng(0)

    def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        return jnp.asarray(rng.normal(mean, stddev, shape).astype(np.float32))

    def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
        return jnp.asarray(rng.uniform(minval, maxval, shape).astype(np.float32))

    def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        values = np.clip(rng.normal(0.0, 1.0, shape), -2.0, 2.0) * stddev + mean
        return jnp.asarray(values.astype(np.float32))

    monkeypatch.setattr(jax_random, "normal", normal)
    monkeypatch.setattr(jax_random, "uniform", uniform)
    monkeypatch.setattr(jax_random, "truncated_normal", truncated_normal)
    return keras


@pytest.fixture(autouse=True)
def free_plans():
    """Frees the compiled plans of the test's models when it ends (not at interpreter exit,
    when the oneDNN binding may already be torn down)."""
    yield
    from kiln import keras as kk

    kk.backend.clear_session()
