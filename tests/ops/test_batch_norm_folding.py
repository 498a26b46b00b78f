"""fold_kernel: an inference batch norm's per-channel scale and shift (gamma / sqrt(variance +
epsilon), beta - mean * scale) in one numba call, with and without gamma and beta."""

import numpy as np
import pytest

from kiln.ops.batch_norm_folding import EMPTY, fold_kernel


@pytest.mark.parametrize("with_gamma, with_beta", [(True, True), (False, True), (True, False)])
def test_fold_kernel_against_numpy(with_gamma, with_beta):
    rng = np.random.default_rng(0)
    c = 37
    variance, mean, gamma, beta = (rng.uniform(0.1, 2.0, c).astype(np.float32),
                                   rng.normal(size=c).astype(np.float32),
                                   rng.uniform(0.5, 1.5, c).astype(np.float32),
                                   rng.normal(size=c).astype(np.float32))
    scale, shift = np.empty(c, np.float32), np.empty(c, np.float32)
    fold_kernel(variance, mean, gamma if with_gamma else EMPTY, beta if with_beta else EMPTY,
                np.float32(1e-3), scale, shift)
    expected = (gamma if with_gamma else 1.0) / np.sqrt(variance.astype(np.float64) + 1e-3)
    np.testing.assert_allclose(scale, expected, rtol=1e-6)
    np.testing.assert_allclose(shift, (beta if with_beta else 0.0) - mean * expected,
                               rtol=1e-5, atol=1e-6)
