"""CumulativeSumOp (keras.ops.cumsum) against numpy with its gradient against the reversed
running sum and central differences, on every non-batch axis of 3D tensors and of 4D ones in
both data formats (the Keras axis of a channels_last image is not its logical one); and
ArgReductionOp (argmax / argmin) against numpy, ties to the first index, no gradient."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.ops.arg_reduction import ArgReductionOp
from kiln.ops.cumulative_sum import CumulativeSumOp


def reversed_cumsum(dy, axis):
    return np.flip(np.cumsum(np.flip(dy, axis), axis), axis)


@pytest.mark.parametrize("shape,axis,data_format", [
    ((2, 5, 3), 1, CHANNELS_LAST), ((2, 5, 3), 2, CHANNELS_LAST),
    ((2, 3, 4, 5), 1, CHANNELS_LAST), ((2, 3, 4, 5), 3, CHANNELS_LAST),
    ((2, 3, 4, 5), 1, CHANNELS_FIRST), ((2, 3, 4, 5), 2, CHANNELS_FIRST)])
def test_cumulative_sum_forward_and_gradient(shape, axis, data_format):
    rng = np.random.default_rng(2)
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)
    check_op(CumulativeSumOp("c", axis), x, {}, dy,
             lambda x64, p: np.cumsum(x64, axis), data_format,
             lambda x64, p, dy64: (reversed_cumsum(dy64, axis), {}), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,axis", [((3, 7), 1), ((2, 5, 4), 1), ((2, 5, 4), 2)])
def test_arg_reduction_forward_against_numpy(mode, shape, axis):
    rng = np.random.default_rng(4)
    x = rng.integers(-3, 4, size=shape).astype(np.float32)  # many ties: the first index wins
    function = np.argmax if mode == "argmax" else np.argmin
    result, _ = check_op(ArgReductionOp("a", mode, axis), x, {}, np.ones(
        tuple(1 if i == axis else d for i, d in enumerate(shape)), np.float32),
        lambda x64, p: function(x64, axis=axis, keepdims=True).astype(np.float64),
        CHANNELS_LAST, numeric=False)
    assert result.input_grad is None


def test_bad_axes_are_named():
    with pytest.raises(ValueError, match="CumulativeSum 'c': argument axis must be a non-batch"):
        CumulativeSumOp("c", 0)
    with pytest.raises(ValueError, match="ArgReduction 'a': argument mode must be"):
        ArgReductionOp("a", "argsort", 1)
