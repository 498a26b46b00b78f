"""kiln.ops.prelu.PReLUOp (oneDNN prelu, alpha broadcast over the batch and shared axes) against
numpy and central differences, in both data formats."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.ops.prelu import PReLUOp


def prelu_reference(x, alpha, dy=None):
    """Keras: relu(x) - alpha * relu(-x); alpha (Keras shape) broadcasts from the right."""
    y = np.maximum(x, 0) - alpha * np.maximum(-x, 0)
    if dy is None:
        return y
    dx = dy * np.where(x > 0, 1.0, alpha)
    dalpha = dy * np.minimum(x, 0)
    shared = tuple(i for i in range(x.ndim) if i == 0 or alpha.shape[i - 1] == 1)
    return y, dx, dalpha.sum(axis=shared, keepdims=True).reshape(alpha.shape)


CASES = {  # name -> (Keras input shape, data format, shared axes)
    "2d": ((5, 6), CHANNELS_LAST, ()),
    "4d-full-cl": ((2, 4, 5, 3), CHANNELS_LAST, ()),
    "4d-shared-hw-cl": ((2, 4, 5, 3), CHANNELS_LAST, (1, 2)),
    "4d-full-cf": ((2, 3, 4, 5), CHANNELS_FIRST, ()),
    "4d-shared-hw-cf": ((2, 3, 4, 5), CHANNELS_FIRST, (2, 3)),
    "4d-shared-c-cl": ((2, 4, 5, 3), CHANNELS_LAST, (3,)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_prelu(case):
    shape, data_format, shared = CASES[case]
    rng = np.random.default_rng(1)
    x = rng.normal(size=shape).astype(np.float32)
    x = np.where(np.abs(x) < 0.05, 0.1, x).astype(np.float32)
    op = PReLUOp("p", shared)
    alpha_shape = tuple(1 if i + 1 in shared else d for i, d in enumerate(shape[1:]))
    alpha = rng.uniform(0.05, 0.5, size=alpha_shape).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)

    def reference(x64, p64):
        return prelu_reference(x64, p64["p/alpha"])

    def reference_grads(x64, p64, dy64):
        _, dx, dalpha = prelu_reference(x64, p64["p/alpha"], dy64)
        return dx, {"p/alpha": dalpha}

    check_op(op, x, {"p/alpha": alpha}, dy, reference, data_format, reference_grads,
             rtol=1e-5, atol=1e-6, grad_rtol=1e-4, grad_atol=1e-5, eps=1e-3, entries=6)
