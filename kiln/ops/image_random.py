"""The random draws of the augmentation layers (kiln/ops/image_*.py): a small serial kernel at
the start of every training step fills a table of per-image uniforms from a counter-based hash
of (seed, step, image, column), as dropout.py draws its masks: no generator state, the same
sequence for the same seed whatever the thread count, a new draw every step. The op's parallel
kernels then read the table (and their backward reads the same table again).

Keras draws the same distributions with JAX's generator, so the values differ; the tests
compare the distributions and, for a given draw, the transformed images.
"""

import numpy as np

from ..binding import constants as dnnl
from .dropout import _mix64, step_salt
from .numba_config import SERIAL, njit


@njit(**SERIAL)
def draw_uniforms(counter, table):
    """table[i, j] = a uniform in [0, 1) for this step; counter = [seed, step] advances."""
    salt = step_salt(counter)
    flat = table.reshape(table.size)
    for i in range(flat.size):
        bits = _mix64(np.uint64(i) ^ salt) >> np.uint64(11)  # 53 bits
        flat[i] = np.float64(bits) * (1.0 / 9007199254740992.0)
    counter[1] += np.uint64(1)


def new_counter(seed):
    """[seed, step] for draw_uniforms; a seed of None draws one from numpy's global state."""
    seed = np.random.randint(0, 2**62) if seed is None else seed
    return np.array([int(seed) % 2**64, 0], dtype=np.uint64)


def check_image_input(x, who):
    """A 4D float32 image batch, or a clear error naming the layer."""
    if len(x.dims) != 4 or x.flattened:
        raise ValueError(f"{who}: expected a 4D image batch, got shape {x.keras_shape}")
    if x.memory.desc.data_type != dnnl.f32:
        raise ValueError(f"{who}: bfloat16 activations are not supported yet (use the "
                         "float32 policy for this layer)")
