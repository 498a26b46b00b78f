"""kiln's copy of Keras-on-JAX's random draws against jax.random itself: the threefry stream
bit for bit (a uniform draw on [1, 2) is the raw 23 mantissa bits, with no rounding on either
side), for seeds Keras passes as signed or unsigned 32-bit keys and shapes of any rank; the
normal and truncated normal draws to a float32 step."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln.keras.initializers import jax_draws  # noqa: E402


def jax_key(seed):
    real_keras()
    import jax.numpy as jnp

    return jnp.array([seed & 0xFFFFFFFF, 0], dtype="uint32")


@pytest.mark.parametrize("seed", [0, 1, 7, 2**31 - 1, 2**31 + 5, 2**32 - 1])
@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 7), (2, 3, 4, 5), (0, 3)])
def test_threefry_stream_is_jax_bit_for_bit(seed, shape):
    import jax

    theirs = np.asarray(jax.random.uniform(jax_key(seed), shape, minval=1.0, maxval=2.0))
    ours = jax_draws.uniform(seed, shape, 1.0, 2.0)
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("seed", [3, 2**31 + 11])
def test_normal_draws_are_jax_to_a_float32_step(seed):
    import jax

    key = jax_key(seed)
    for ours, theirs in [
        (jax_draws.normal(seed, (200, 150)), jax.random.normal(key, (200, 150))),
        (jax_draws.truncated_normal(seed, (200, 150)),
         jax.random.truncated_normal(key, -2.0, 2.0, (200, 150))),
    ]:
        theirs = np.asarray(theirs)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=2 * np.spacing(np.float32(4.0)))
        assert np.mean(ours == theirs) > 0.95
    truncated = jax_draws.truncated_normal(seed, (200, 150))
    assert np.abs(truncated).max() < 2.0
