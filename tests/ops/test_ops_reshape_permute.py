"""kiln.ops.reshape.ReshapeOp and kiln.ops.permute.PermuteOp (oneDNN reorders) against numpy on
the Keras view of the tensor, in both data formats, and behind a conv's blocked layout."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op, conv2d_reference
from test_ops_pad_crop_resize import linear_adjoint

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.flatten import FlattenOp
from kiln.ops.permute import PermuteOp
from kiln.ops.reshape import ReshapeOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]

RESHAPES = {  # Keras input shape (without batch) -> target shape
    "4d-to-2d": ((4, 3, 2), (24,)),
    "4d-to-4d": ((4, 3, 2), (2, 6, 2)),
    "4d-to-3d": ((4, 3, 2), (6, -1)),
    "2d-to-4d": ((24,), (2, 3, 4)),
    "2d-to-3d": ((12,), (3, 4)),
}
PERMUTES = {  # Keras input shape -> dims
    "4d-swap-hw": ((4, 3, 2), (2, 1, 3)),
    "4d-channels-first": ((4, 3, 2), (3, 1, 2)),
    "4d-cycle": ((4, 3, 2), (2, 3, 1)),
    "3d": ((4, 5), (2, 1)),
}


def run(op, keras_in_shape, data_format, function):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, *keras_in_shape)).astype(np.float32)
    dy = rng.normal(size=function(x).shape).astype(np.float32)

    def reference(x64, p64):
        return function(x64)

    def reference_grads(x64, p64, dy64):
        return linear_adjoint(function, x64, dy64), {}

    return check_op(op, x, {}, dy, reference, data_format, reference_grads, rtol=1e-6,
                    atol=1e-6, grad_rtol=1e-6, grad_atol=1e-6, numeric=False)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(RESHAPES))
def test_reshape(case, data_format):
    shape, target = RESHAPES[case]
    resolved = tuple(d if d != -1 else int(np.prod(shape)) // 6 for d in target)
    run(ReshapeOp("r", target, data_format), shape, data_format,
        lambda x: x.reshape(len(x), *resolved))


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(PERMUTES))
def test_permute(case, data_format):
    shape, dims = PERMUTES[case]
    run(PermuteOp("p", dims, data_format), shape, data_format,
        lambda x: np.transpose(x, (0, *dims)))


@pytest.mark.parametrize("data_format", FORMATS)
def test_conv_permute_flatten_reshape_chain(data_format):
    """Behind a conv's blocked layout; ReshapeOp of a flattened tensor reads Keras's (h, w, c)
    order in both formats."""
    rng = np.random.default_rng(2)
    shape = (2, 4, 5, 16) if data_format == CHANNELS_LAST else (2, 16, 4, 5)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.2, size=(3, 3, 16, 8)).astype(np.float32),
              "conv/bias": rng.normal(0, 0.1, size=8).astype(np.float32)}
    dims = (2, 1, 3)

    def to_keras(y):
        return y if data_format == CHANNELS_LAST else y.transpose(0, 2, 3, 1)

    def reference(x64, p64):
        y = conv2d_reference(x64, p64["conv/kernel"], p64["conv/bias"], (1, 1), "same", "tanh",
                             data_format)
        keras_view = np.transpose(y, (0, *dims))
        return to_keras(keras_view).reshape(2, 16, 10)

    ops = [Conv2DOp("conv", 8, (3, 3), padding="same", activation="tanh"),
           PermuteOp("p", dims, data_format), FlattenOp("f"),
           ReshapeOp("r", (16, 10), data_format, flattened=True)]
    dy = rng.normal(size=(2, 16, 10)).astype(np.float32)
    check_op(ops, x, params, dy, reference, data_format, rtol=1e-4, atol=1e-5, eps=1e-2,
             entries=6)


def test_bad_target_shape_and_dims_are_rejected():
    with pytest.raises(ValueError, match="argument target_shape"):
        ReshapeOp("r", (5, -1)).output_dims((1, 2, 3, 4))
    with pytest.raises(ValueError, match="argument dims must be a permutation"):
        PermuteOp("p", (1, 1, 2)).output_dims((1, 2, 3, 4))
