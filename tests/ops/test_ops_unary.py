"""UnaryOp (oneDNN eltwise for keras.ops math that is not an activation): every function's
forward against numpy and its gradient against the analytic derivative and central
differences, in both data formats."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.ops.unary import UnaryOp

# (function, alpha, beta, forward in float64, derivative, positive inputs only)
CASES = {
    "x*3-1": ("linear", 3.0, -1.0, lambda x: 3 * x - 1, lambda x: 3 + 0 * x, False),
    "square": ("square", 0.0, 0.0, np.square, lambda x: 2 * x, False),
    "abs": ("abs", 0.0, 0.0, np.abs, np.sign, False),
    "sqrt": ("sqrt", 0.0, 0.0, np.sqrt, lambda x: 0.5 / np.sqrt(x), True),
    "log": ("log", 0.0, 0.0, np.log, lambda x: 1 / x, True),
    "2/x": ("pow", 2.0, -1.0, lambda x: 2 / x, lambda x: -2 / x ** 2, True),
    "x**1.5": ("pow", 1.0, 1.5, lambda x: x ** 1.5, lambda x: 1.5 * np.sqrt(x), True),
    "clip": ("clip", -0.5, 0.7, lambda x: np.clip(x, -0.5, 0.7),
             lambda x: ((x > -0.5) & (x < 0.7)).astype(np.float64), False),
}


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("case", sorted(CASES))
def test_unary_forward_and_gradient(case, data_format):
    function, alpha, beta, forward, derivative, positive = CASES[case]
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.5, 1.5, size=(2, 3, 4, 5))
    # keep away from kinks (0 for abs, the clip bounds) where central differences jump
    x = np.where(np.abs(x) < 0.1, 0.3, x)
    x = np.where(np.abs(x - 0.7) < 0.05, 0.9, np.where(np.abs(x + 0.5) < 0.05, -0.9, x))
    if positive:
        x = np.abs(x) + 0.5
    x = x.astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    # oneDNN's vectorized log is a polynomial good to a few 1e-6 absolute
    atol = 1e-5 if function == "log" else 1e-6
    check_op(UnaryOp(f"u_{function}", function, alpha, beta), x, {}, dy,
             lambda x64, p: forward(x64), data_format,
             lambda x64, p, dy64: (dy64 * derivative(x64), {}), rtol=1e-5, atol=atol)


def test_unknown_function_is_named():
    with pytest.raises(ValueError, match="Unary 'u': argument function must be one of"):
        UnaryOp("u", "cube")
