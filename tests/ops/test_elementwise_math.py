"""ElementwiseMathOp (numba kernels for keras.ops.sin, cos, erf, round): forward against numpy
and the gradient against the analytic derivative and central differences, in both data
formats and on a blocked layout (the kernels are element-wise over any layout)."""

import math

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.ops.elementwise_math import ElementwiseMathOp

ERF = np.vectorize(math.erf)

# function -> (forward in float64, derivative)
CASES = {
    "sin": (np.sin, np.cos),
    "cos": (np.cos, lambda x: -np.sin(x)),
    "erf": (ERF, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)),
    "round": (np.round, lambda x: 0 * x),
}


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("function", sorted(CASES))
def test_forward_and_gradient(function, data_format):
    forward, derivative = CASES[function]
    rng = np.random.default_rng(5)
    x = rng.uniform(-3.0, 3.0, size=(2, 3, 4, 5))
    if function == "round":
        # away from the jumps at .5 (central differences), with exact halves checked below
        x = np.floor(x) + rng.uniform(0.1, 0.4, x.shape) * rng.choice([1, 3], x.shape)
    x = x.astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    check_op(ElementwiseMathOp(f"m_{function}", function), x, {}, dy,
             lambda x64, p: forward(x64), data_format,
             lambda x64, p, dy64: (dy64 * derivative(x64), {}), rtol=1e-5, atol=2e-6)


def test_round_takes_halves_to_even_as_numpy():
    x = np.array([[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, -3.51]], np.float32)
    check_op(ElementwiseMathOp("r", "round"), x, {}, np.ones_like(x),
             lambda x64, p: np.round(x64), CHANNELS_LAST,
             lambda x64, p, dy64: (0 * dy64, {}), numeric=False)


def test_unknown_function_is_named():
    with pytest.raises(ValueError, match="ElementwiseMath 'm': argument function must be one"):
        ElementwiseMathOp("m", "tan")
