"""kiln.ops.slice.SliceOp: the window's values and the zero-filled input gradient with the
output gradient in the window, against float64 numpy and central differences, in both data
formats, 2D / 3D / 4D, from oneDNN's blocked layouts (a window inside a channel block too),
and the bounds errors."""

import numpy as np
import pytest
from multi_input_checker import check_multi_input_op
from op_checker import CHANNELS_FIRST, CHANNELS_LAST

from kiln.binding import constants as dnnl
from kiln.ops.slice import SliceOp
from kiln.ops.tensor import keras_shape


class OneInput:
    """SliceOp seen through the several-input checker (which can lay its input out blocked)."""

    arity = None

    def __init__(self, op):
        self.op, self.name = op, op.name

    def output_dims(self, dims):
        return self.op.output_dims(dims[0])

    def forward(self, builder, tensors, need):
        output, backward = self.op.forward(builder, tensors[0], need[0])
        return output, lambda grad: [backward(grad)]


def to_logical(x, data_format):
    return np.transpose(x, (0, 3, 1, 2)) if x.ndim == 4 and data_format == CHANNELS_LAST else x


def to_keras(x, data_format):
    return np.transpose(x, (0, 2, 3, 1)) if x.ndim == 4 and data_format == CHANNELS_LAST else x


def check(dims, starts, sizes, data_format=CHANNELS_LAST, layout=None, numeric=True):
    rng = np.random.default_rng(len(dims) + sum(starts))
    x = rng.normal(size=keras_shape(dims, data_format)).astype(np.float32)
    window = tuple(slice(s, s + n) if n is not None else slice(None)
                   for s, n in zip(starts, sizes, strict=True))
    out_shape = to_keras(to_logical(x, data_format)[window], data_format).shape
    dy = rng.normal(size=out_shape).astype(np.float32)

    def reference(xs, p):
        return to_keras(to_logical(xs[0], data_format)[window], data_format)

    def reference_grads(xs, p, dy):
        grad = np.zeros_like(to_logical(xs[0], data_format))
        grad[window] = to_logical(dy, data_format)
        return [to_keras(grad, data_format)]

    check_multi_input_op(OneInput(SliceOp("window", starts, sizes)), [x], dy, reference,
                         data_format=data_format, reference_grads=reference_grads,
                         numeric=numeric, layouts={} if layout is None else {0: layout},
                         entries=4, rtol=0, atol=0, grad_rtol=0, grad_atol=0)


CASES = [  # (name, logical dims, starts, sizes)
    ("channels", (2, 6, 4, 5), (0, 1, 0, 0), (None, 3, 4, 5)),
    ("spatial", (2, 3, 4, 5), (0, 0, 1, 2), (None, 3, 2, 3)),
    ("every-axis", (2, 6, 4, 5), (0, 5, 3, 0), (None, 1, 1, 4)),
    ("2d", (3, 7), (0, 2), (None, 4)),
    ("3d", (2, 5, 4), (0, 1, 3), (None, 3, 1)),
]


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_window_and_gradient_match_numpy(case, data_format):
    name, dims, starts, sizes = case
    if len(dims) != 4 and data_format == CHANNELS_FIRST:
        pytest.skip("only 4D tensors have two layouts")
    check(dims, starts, sizes, data_format, numeric=data_format == CHANNELS_LAST)


@pytest.mark.parametrize("start,size", [(8, 8), (2, 3), (0, 12)], ids=["block", "inside", "padded"])
def test_from_a_blocked_layout(start, size):
    """nChw8c input: a window of whole blocks is read in place; one starting inside a block
    comes from the input reordered to plain first; 12 of 16 channels leaves padding."""
    check((2, 16, 3, 3), (0, start, 0, 0), (None, size, 3, 3), layout=dnnl.aBcd8b,
          numeric=False)


def test_windows_outside_the_input_are_named():
    with pytest.raises(ValueError, match=r"Slice 'cut': the window \[3, 6\) of axis 1 .*"
                                         r"\(2, 4, 5, 5\)"):
        SliceOp("cut", (0, 3, 0, 0), (None, 3, 5, 5)).output_dims((2, 4, 5, 5))
    with pytest.raises(ValueError, match="Slice 'cut': arguments starts and sizes"):
        SliceOp("cut", (1, 0), (None, 2))


def test_two_windows_of_equal_dims_at_other_offsets_are_two_primitives():
    """A reorder primitive is made for one offset: the second window must not reuse the
    first one's from the process cache (its descriptor's layout is the same)."""
    check((2, 6, 4, 5), (0, 0, 0, 0), (None, 3, 4, 5), numeric=False)
    check((2, 6, 4, 5), (0, 3, 0, 0), (None, 3, 4, 5), numeric=False)


def test_bf16_window_inside_a_channel_block():
    """Mixed precision: the plain layout a window inside a block is read from stays bf16."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 3, 16)).astype(np.float32)
    dy = rng.normal(size=(2, 3, 3, 3)).astype(np.float32)
    result, harness = check_multi_input_op(
        OneInput(SliceOp("window", (0, 2, 0, 0), (None, 3, 3, 3))), [x], dy,
        lambda xs, p: xs[0][..., 2:5], layouts={0: dnnl.aBcd8b}, data_type=dnnl.bf16,
        numeric=False, rtol=1e-2, atol=1e-2, grad_rtol=1e-2, grad_atol=1e-2)
    assert harness.output_tensor.memory.desc.data_type == dnnl.bf16
