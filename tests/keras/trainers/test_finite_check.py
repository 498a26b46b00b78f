"""The finite check fit() runs over every sample of array data once per call
(batch_checks.first_non_finite, a maximum over the floats' exponent bits): the index of the
first NaN or inf as numpy finds it, for both float widths, serial and parallel, across block
boundaries, with the extreme finite values (largest, subnormal, negative zero) finite."""

import numpy as np
import pytest

from kiln.keras.trainers.data_adapters.batch_checks import first_non_finite


def reference(array):
    bad = np.flatnonzero(~np.isfinite(array.reshape(-1)))
    return int(bad[0]) if bad.size else -1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("parallel", [False, True])
def test_first_non_finite_is_numpys(dtype, parallel):
    rng = np.random.default_rng(0)
    size = 3 * (1 << 16) + 5  # four blocks, the last one short
    info = np.finfo(dtype)
    base = rng.normal(size=size).astype(dtype)
    base[:6] = [info.max, -info.max, info.tiny, info.smallest_subnormal, -0.0, 0.0]
    assert first_non_finite(base, parallel) == -1
    for positions in ([0], [size - 1], [1 << 16], [(1 << 16) - 1], [70_000, 5], [150_001]):
        for value in (np.nan, np.inf, -np.inf):
            array = base.copy()
            array[positions] = value
            assert first_non_finite(array, parallel) == reference(array) == min(positions)
    shaped = base[:6 * 7].reshape(6, 7).copy()
    shaped[4, 2] = np.nan
    assert first_non_finite(shaped, parallel) == 30
    assert first_non_finite(np.empty((0, 3), dtype), parallel) == -1
    assert first_non_finite(np.full(1, np.inf, dtype), parallel) == 0


def test_integers_and_non_contiguous_arrays():
    assert first_non_finite(np.arange(10), parallel=True) == -1
    array = np.ones((8, 8), np.float32)
    array[3, 6] = np.inf
    assert first_non_finite(array.T, parallel=True) == 6 * 8 + 3  # its own C order
