"""BroadcastBinaryOp with a constant array operand (a numpy array in a custom layer's call():
`(x - MEAN) / STD`, `1 - x`): the plan holds the values, on either side of the operation; the
input's gradient against numpy and central differences, the constant gets none."""

import numpy as np
import pytest
from op_checker import check_op

from kiln.binding import constants as dnnl
from kiln.ops.broadcast import BroadcastBinaryOp
from kiln.ops.tensor import CHANNELS_FIRST, CHANNELS_LAST

N, C, H, W = 2, 3, 4, 5
FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


CASES = {  # name: (Keras shape channels_last, logical dims)
    "per channel": ((C,), (1, C, 1, 1)),
    "per row and channel": ((H, 1, C), (1, C, H, 1)),
}
OPERATIONS = {"subtract": np.subtract, "divide": np.divide, "maximum": np.maximum,
              "power": np.power}


@pytest.mark.parametrize("constant_first", [False, True])
@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("data_format", FORMATS)
def test_a_constant_array_on_either_side(data_format, case, operation, constant_first):
    keras_shape, dims = CASES[case]
    rng = np.random.default_rng(3)
    values = rng.uniform(0.5, 2.0, keras_shape).astype(np.float32)
    x = rng.uniform(0.5, 2.0, (N, H, W, C)).astype(np.float32)  # positive: power's base
    dy = rng.normal(size=(N, H, W, C)).astype(np.float32)
    # the constant broadcast against the channels_last Keras tensor (N, H, W, C)
    broadcast = values.reshape((1,) * (4 - len(keras_shape)) + keras_shape)
    if data_format == CHANNELS_FIRST:  # the user's tensors and constant are NCHW
        x, dy = (np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in (x, dy))
        broadcast = broadcast.transpose(0, 3, 1, 2)
        tag, stored = dnnl.abcd, np.ascontiguousarray(broadcast)
    else:
        tag, stored = dnnl.acdb, np.ascontiguousarray(broadcast)
    function = OPERATIONS[operation]
    op = BroadcastBinaryOp("norm", operation, constant_array=(stored, dims, tag),
                           constant_first=constant_first)

    def reference(x, params):
        c = broadcast.astype(np.float64)
        return function(c, x) if constant_first else function(x, c)

    check_op(op, x, {}, dy, reference, data_format, rtol=1e-5, atol=1e-5)


def test_a_constant_that_does_not_fill_its_dims_is_refused():
    with pytest.raises(ValueError, match=r"BroadcastBinary 'norm'.*6 values.*\(1, 3, 1, 1\)"):
        BroadcastBinaryOp("norm", "add", constant_array=(np.ones(6), (1, 3, 1, 1), dnnl.abcd))
