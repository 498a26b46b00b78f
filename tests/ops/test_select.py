"""kiln.ops.select.SelectOp (keras.ops.where): forward and the gradients of x1 and x2 against
float64 numpy's where (numpy's broadcasting) and central differences, in both data formats,
with blocked inputs, number operands, and the errors."""

import numpy as np
import pytest
from multi_input_checker import check_multi_input_op
from op_checker import CHANNELS_FIRST, CHANNELS_LAST
from test_broadcast import keras, unbroadcast

from kiln.binding import constants as dnnl
from kiln.ops.select import SelectOp

N, C, H, W = 2, 3, 4, 5

# (name, logical dims of condition, x1, x2)
TRIPLES = [
    ("equal", (N, C, H, W), (N, C, H, W), (N, C, H, W)),
    ("per-channel-values", (N, C, H, W), (1, C, 1, 1), (N, C, H, W)),
    ("broadcast-condition", (1, C, 1, W), (N, C, H, W), (N, 1, H, 1)),
    ("all-broadcast", (N, 1, H, 1), (1, C, 1, 1), (1, 1, 1, W)),
    ("2d", (4, 6), (1, 6), (4, 1)),
]


def operands(dims, data_format, seed):
    """A condition of -1, 0 and 2 (a third zeros: non-zero is true) and two value tensors."""
    rng = np.random.default_rng(seed)
    shapes = [keras(d, data_format) for d in dims]
    condition = rng.choice([-1.0, 0.0, 2.0], shapes[0]).astype(np.float32)
    values = [rng.normal(size=s).astype(np.float32) for s in shapes[1:]]
    return [condition, *values], rng.normal(size=np.broadcast_shapes(*shapes)).astype(
        np.float32)


def reference(xs, p):
    return np.where(xs[0] != 0, xs[1], xs[2])


def reference_grads(xs, p, dy):
    chosen = np.broadcast_to(xs[0] != 0, dy.shape)
    return [np.zeros_like(xs[0]), unbroadcast(np.where(chosen, dy, 0.0), xs[1].shape),
            unbroadcast(np.where(chosen, 0.0, dy), xs[2].shape)]


@pytest.mark.parametrize("data_format", [CHANNELS_LAST, CHANNELS_FIRST])
@pytest.mark.parametrize("triple", TRIPLES, ids=lambda t: t[0])
def test_where_matches_numpy_and_central_differences(triple, data_format):
    name, *dims = triple
    if len(dims[0]) != 4 and data_format == CHANNELS_FIRST:
        pytest.skip("only 4D tensors have two layouts")
    xs, dy = operands(dims, data_format, seed=len(name))
    check_multi_input_op(SelectOp("where"), xs, dy, reference, data_format=data_format,
                         reference_grads=reference_grads, entries=3, rtol=0, atol=0,
                         grad_rtol=1e-5, grad_atol=1e-5)


def test_blocked_input_and_number_operands():
    """x1 in nChw8c with a per-channel x2; then where(c, x, 0.5) and where(c, 1.0, -x): the
    number operands are constants of the op."""
    xs, dy = operands([(N, 16, H, W), (N, 16, H, W), (1, 16, 1, 1)], CHANNELS_LAST, seed=1)
    check_multi_input_op(SelectOp("blocked"), xs, dy, reference, reference_grads=reference_grads,
                         layouts={1: dnnl.aBcd8b}, entries=3, rtol=0, atol=0,
                         grad_rtol=1e-5, grad_atol=1e-5)
    condition, x = xs[0], xs[1]
    check_multi_input_op(
        SelectOp("zero_else", {2: 0.5}), [condition, x], dy,
        lambda xs, p: np.where(xs[0] != 0, xs[1], 0.5),
        reference_grads=lambda xs, p, dy: [np.zeros_like(xs[0]), np.where(xs[0] != 0, dy, 0)],
        entries=3, rtol=0, atol=0)
    check_multi_input_op(
        SelectOp("one_if", {1: 1.0}), [condition, x], dy,
        lambda xs, p: np.where(xs[0] != 0, 1.0, xs[1]),
        reference_grads=lambda xs, p, dy: [np.zeros_like(xs[0]), np.where(xs[0] != 0, 0, dy)],
        data_format=CHANNELS_FIRST, entries=3, rtol=0, atol=0)


def test_shapes_that_do_not_broadcast_and_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"where 'w'.*\(2, 3, 4, 5\).*\(1, 2, 1, 1\)"):
        SelectOp("w").output_dims([(2, 3, 4, 5), (2, 3, 4, 5), (1, 2, 1, 1)])
    with pytest.raises(ValueError, match=r"where 'w': takes 3 inputs .*got 2"):
        SelectOp("w").output_dims([(2, 3), (2, 3)])
    with pytest.raises(ValueError, match="Select 'w': argument constants"):
        SelectOp("w", {3: 1.0})
