"""kiln.ops.broadcast.BroadcastBinaryOp: forward and both operands' gradients against float64
numpy (numpy's broadcasting) and central differences, over a table of broadcasting shape
pairs in both data formats, 2D, 3D and 4D, two tensors or a tensor and a parameter, activations
in oneDNN's blocked layouts (also padded), and the shape errors."""

import numpy as np
import pytest
from multi_input_checker import MultiInputHarness, check_multi_input_op
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op, native_channel_block

from kiln.binding import constants as dnnl
from kiln.ops.broadcast import COMPARISONS, OPERATIONS, BroadcastBinaryOp
from kiln.ops.tensor import keras_shape

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]
# power is tested on positive bases, the comparisons on their own
SIGNED = [op for op in OPERATIONS if op != "power" and op not in COMPARISONS]
N, C, H, W = 2, 3, 4, 5

# (name, logical dims of x0, logical dims of x1): (N, C, H, W) whatever the data format
PAIRS = [
    ("equal", (N, C, H, W), (N, C, H, W)),
    ("scalar", (N, C, H, W), (1, 1, 1, 1)),
    ("per-channel", (N, C, H, W), (1, C, 1, 1)),
    ("trailing", (N, C, H, W), (1, 1, H, W)),
    ("last", (N, C, H, W), (1, 1, 1, W)),
    ("leading", (N, C, H, W), (N, 1, 1, 1)),
    ("middle", (N, C, H, W), (1, C, H, 1)),
    ("first-broadcast", (1, C, 1, 1), (N, C, H, W)),
    ("both-sides", (N, 1, H, 1), (1, C, 1, W)),
    ("2d-features", (4, 6), (1, 6)),
    ("2d-both-sides", (4, 1), (1, 6)),
    ("3d-sequence", (2, 5, 4), (1, 1, 4)),
]


def forward_reference(operation, a, b):
    return {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
            "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
            "power": np.power}[operation](a, b)


def unbroadcast(grad, shape):
    """Sum `grad` over the axes where an operand of `shape` was broadcast."""
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape, strict=True)) if s == 1
                 and g != 1)
    return grad.sum(axis=axes, keepdims=True)


def gradient_reference(operation, a, b, dy):
    """d(sum(out * dy)) / d a and / d b in float64 (JAX's half-and-half split of ties)."""
    if operation == "add":
        da, db = dy, dy
    elif operation == "subtract":
        da, db = dy, -dy
    elif operation == "multiply":
        da, db = dy * b, dy * a
    elif operation == "divide":
        da, db = dy / b, -dy * a / (b * b)
    elif operation == "power":
        da, db = dy * b * a ** (b - 1), dy * np.log(a) * a ** b
    else:
        sign = 1.0 if operation == "maximum" else -1.0
        share = (sign * a > sign * b) + 0.5 * (a == b)
        da, db = dy * share, dy * (1.0 - share)
    return unbroadcast(da, a.shape), unbroadcast(db, b.shape)


def keras(dims, data_format):
    return keras_shape(dims, data_format)


def operands(dims0, dims1, data_format, seed):
    """Two operands in Keras layout, away from 0 (divide) and without ties (maximum)."""
    rng = np.random.default_rng(seed)
    shapes = [keras(dims0, data_format), keras(dims1, data_format)]
    values = []
    for shape in shapes:
        magnitude = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.07 + 0.5
        values.append((magnitude * rng.choice([-1.0, 1.0], shape)).astype(np.float32))
    out = np.broadcast_shapes(*shapes)
    return values, rng.normal(size=out).astype(np.float32)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("pair", PAIRS, ids=[p[0] for p in PAIRS])
def test_two_tensors_match_numpy_for_every_operation(pair, data_format):
    """Every operation's output and both gradients equal numpy's (channels_first: two of
    them, taking turns); one per pair is also checked with central differences."""
    name, dims0, dims1 = pair
    if len(dims0) != 4 and data_format == CHANNELS_FIRST:
        pytest.skip("only 4D tensors have two layouts")
    xs, dy = operands(dims0, dims1, data_format, seed=len(name))
    turn = PAIRS.index(pair)
    for index, operation in enumerate(SIGNED):
        if data_format == CHANNELS_FIRST and index not in (turn % 6, (turn + 3) % 6):
            continue
        numeric = index == turn % len(SIGNED)
        check_multi_input_op(
            BroadcastBinaryOp(f"{operation}_op", operation), xs, dy,
            lambda xs, p, operation=operation: forward_reference(operation, *xs),
            data_format=data_format,
            reference_grads=lambda xs, p, dy, operation=operation: list(
                gradient_reference(operation, *xs, dy)),
            numeric=numeric, entries=3, rtol=1e-5, atol=1e-5, grad_rtol=1e-4, grad_atol=1e-4)


PARAMETERS = [  # (name, logical dims of x, logical dims of the parameter, operation, format)
    ("bias", (N, C, H, W), (1, C, 1, 1), "add", CHANNELS_LAST),
    ("bias", (N, C, H, W), (1, C, 1, 1), "add", CHANNELS_FIRST),
    ("scale", (N, C, H, W), (1, C, 1, 1), "multiply", CHANNELS_LAST),
    ("scale", (N, C, H, W), (1, C, 1, 1), "multiply", CHANNELS_FIRST),
    ("scalar", (N, C, H, W), (1, 1, 1, 1), "multiply", CHANNELS_LAST),
    ("per-pixel", (N, C, H, W), (1, C, H, W), "divide", CHANNELS_LAST),
    ("per-pixel", (N, C, H, W), (1, C, H, W), "subtract", CHANNELS_FIRST),
    ("2d-features", (4, 6), (1, 6), "maximum", CHANNELS_LAST),
]


@pytest.mark.parametrize("case", PARAMETERS,
                         ids=[f"{c[0]}-{c[3]}-{c[4]}" for c in PARAMETERS])
def test_parameter_operand(case):
    """x (op) a learned weight: the weight's gradient is the sum over the broadcast axes."""
    name, dims, param_dims, operation, data_format = case
    (x, weight), dy = operands(dims, param_dims, data_format, seed=7)
    tag = dnnl.acdb if len(dims) == 4 and data_format == CHANNELS_LAST else None
    weight_value = weight.reshape(weight.shape[1:])  # Keras' weight has no batch axis
    op = BroadcastBinaryOp("scale", operation, ("kernel", param_dims, tag or {
        4: dnnl.abcd, 2: dnnl.ab}[len(dims)]))

    def reference(x, params):
        return forward_reference(operation, x, params["scale/kernel"][None])

    def reference_grads(x, params, dy):
        dx, dw = gradient_reference(operation, x, params["scale/kernel"][None], dy)
        return dx, {"scale/kernel": dw[0]}

    check_op(op, x, {"scale/kernel": weight_value}, dy, reference, data_format,
             reference_grads=reference_grads, entries=3)


@pytest.mark.parametrize("pair", [PAIRS[2], PAIRS[7], PAIRS[8]], ids=lambda p: p[0])
def test_power_of_positive_bases(pair):
    """x0 ** x1 and the power rule's gradients (numba both ways: oneDNN has no pow)."""
    name, dims0, dims1 = pair
    (base, exponent), dy = operands(dims0, dims1, CHANNELS_FIRST, seed=11)
    xs = [np.abs(base) + np.float32(0.5), exponent]
    check_multi_input_op(
        BroadcastBinaryOp("pow", "power"), xs, dy,
        lambda xs, p: forward_reference("power", *xs), data_format=CHANNELS_FIRST,
        reference_grads=lambda xs, p, dy: list(gradient_reference("power", *xs, dy)),
        entries=3, rtol=1e-5, atol=1e-5, grad_rtol=1e-4, grad_atol=1e-4)


def test_frozen_parameter_and_no_input_gradient():
    """A frozen weight gets no gradient call; without need_input_grad nothing is planned."""
    (x, weight), dy = operands((N, C, H, W), (1, C, 1, 1), CHANNELS_LAST, seed=3)
    op = BroadcastBinaryOp("bias", "add", ("bias", (1, C, 1, 1), dnnl.acdb))
    harness = OpHarness(op, x, {"bias/bias": weight[0]}, need_input_grad=False,
                        frozen=("bias/bias",))
    assert harness.backward_calls == [] and harness.input_grad_memory is None
    np.testing.assert_allclose(harness.forward(x), x + weight, rtol=1e-6)


def test_add_hands_the_output_gradient_through_without_a_copy():
    """The full-size input of add gets the output gradient buffer itself; the only backward
    call is the bias gradient's sum over N, H, W."""
    (x, weight), dy = operands((N, C, H, W), (1, C, 1, 1), CHANNELS_LAST, seed=4)
    harness = OpHarness(BroadcastBinaryOp("bias", "add", ("bias", (1, C, 1, 1), dnnl.acdb)),
                        x, {"bias/bias": weight[0]})
    assert harness.input_grad_memory is harness.dy_memory
    assert len(harness.backward_calls) == 1
    _, grads = harness.backward(dy)
    np.testing.assert_allclose(grads["bias/bias"].reshape(-1), dy.sum(axis=(0, 1, 2)),
                               rtol=1e-5)


@pytest.mark.parametrize("channels,tag,operation", [(16, dnnl.aBcd8b, "add"),
                                                    (16, dnnl.aBcd8b, "multiply"),
                                                    (16, dnnl.aBcd16b, "maximum"),
                                                    (12, dnnl.aBcd8b, "multiply")])
def test_blocked_layouts(channels, tag, operation):
    """A conv-style blocked input (12 channels: padded to 16) with a per-channel operand and
    with a (1, C, H, 1) one (a pattern oneDNN runs with its reference kernel)."""
    for index, second in enumerate([(1, channels, 1, 1), (1, channels, H, 1)]):
        xs, dy = operands((N, channels, H, W), second, CHANNELS_LAST, seed=index)
        check_multi_input_op(
            BroadcastBinaryOp("blocked", operation), xs, dy,
            lambda xs, p: forward_reference(operation, *xs),
            reference_grads=lambda xs, p, dy: list(gradient_reference(operation, *xs, dy)),
            layouts={0: tag}, numeric=index == 0, entries=3, rtol=1e-5, atol=1e-5,
            grad_rtol=1e-4, grad_atol=1e-4)


def test_per_channel_forward_is_one_onednn_call_in_the_input_layout():
    """A per-channel bias onto the CPU's blocked layout: one binary primitive, no reorder of
    the activation."""
    xs, _ = operands((N, 16, H, W), (1, 16, 1, 1), CHANNELS_LAST, seed=5)
    harness = MultiInputHarness(BroadcastBinaryOp("bias", "add"), xs,
                                layouts={0: native_channel_block()})
    op_calls = [c for c in harness.forward_calls if c.label.startswith("bias")]
    assert [type(c).__name__ for c in op_calls if "forward" in c.label] == ["BoundCall"]
    assert not [c for c in op_calls if "input 0" in c.label]
    assert harness.output_tensor.memory.desc == harness.input_tensors[0].memory.desc


def test_shapes_that_do_not_broadcast_name_both_shapes_and_the_op():
    op = BroadcastBinaryOp("my_add", "add")
    with pytest.raises(ValueError, match=r"add 'my_add'.*\(2, 3, 4, 5\).*\(1, 2, 1, 1\)"):
        op.output_dims([(2, 3, 4, 5), (1, 2, 1, 1)])
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 3, 1, 1\)"):
        op.output_dims([(2, 3), (2, 3, 1, 1)])
    scale = BroadcastBinaryOp("scale", "multiply", ("w", (1, 4, 1, 1), dnnl.abcd))
    with pytest.raises(ValueError, match=r"multiply 'scale'.*\(2, 3, 4, 5\).*\(1, 4, 1, 1\)"):
        scale.output_dims((2, 3, 4, 5))
    with pytest.raises(ValueError, match="operation must be one of"):
        BroadcastBinaryOp("mod", "mod")


@pytest.mark.parametrize("layout", [None, dnnl.aBcd8b])
@pytest.mark.parametrize("operation", ["add", "multiply"])
def test_per_channel_gradient_of_short_lines(layout, operation):
    """8 channels (nhwc) or 8-lane blocks (nChw8c) over 4x4 images: the reduction sums 64
    floats side by side and folds the lanes (its fast path for a bias or scale gradient)."""
    xs, dy = operands((2, 8, 4, 4), (1, 8, 1, 1), CHANNELS_LAST, seed=9)
    check_multi_input_op(
        BroadcastBinaryOp("short", operation), xs, dy,
        lambda xs, p: forward_reference(operation, *xs),
        reference_grads=lambda xs, p, dy: list(gradient_reference(operation, *xs, dy)),
        layouts={} if layout is None else {0: layout}, numeric=False, rtol=1e-5, atol=1e-5,
        grad_rtol=1e-4, grad_atol=1e-4)


COMPARED = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
            "greater_equal": np.greater_equal, "less": np.less, "less_equal": np.less_equal}


def tied_operands(dims0, dims1, data_format, seed):
    """Two operands on a coarse grid (-1, -0.5, ..., 1): many ties, for equal and the >=."""
    rng = np.random.default_rng(seed)
    shapes = [keras(dims0, data_format), keras(dims1, data_format)]
    xs = [(rng.integers(-2, 3, shape) * 0.5).astype(np.float32) for shape in shapes]
    return xs, rng.normal(size=np.broadcast_shapes(*shapes)).astype(np.float32)


def compared(operation):
    return lambda xs, p: COMPARED[operation](*xs).astype(np.float64)


def zero_grads(xs, p, dy):
    return [np.zeros_like(x) for x in xs]


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("pair", [PAIRS[i] for i in (0, 1, 2, 3, 7, 8, 9)],
                         ids=lambda p: p[0])
def test_comparisons_give_one_and_zero_and_no_gradient(pair, data_format):
    """Every comparison (oneDNN binary, or the numba kernel where x0 is broadcast or oneDNN
    has its reference kernel) is 1.0 where numpy's is True, 0.0 elsewhere, ties included;
    both inputs get a zero gradient."""
    name, dims0, dims1 = pair
    if len(dims0) != 4 and data_format == CHANNELS_FIRST:
        pytest.skip("only 4D tensors have two layouts")
    xs, dy = tied_operands(dims0, dims1, data_format, seed=len(name))
    for operation in COMPARISONS:
        result, _ = check_multi_input_op(
            BroadcastBinaryOp(f"{operation}_op", operation), xs, dy, compared(operation),
            data_format=data_format, reference_grads=zero_grads, numeric=False, atol=0)
        assert 0 < result.output.sum() < result.output.size, "a test without both outcomes"


def test_comparison_gradient_is_zero_by_central_differences():
    """Away from ties a comparison is flat: central differences of both inputs are 0 too."""
    xs, dy = operands((N, C, H, W), (1, C, 1, 1), CHANNELS_LAST, seed=2)
    check_multi_input_op(BroadcastBinaryOp("gt", "greater"), xs, dy, compared("greater"),
                         reference_grads=zero_grads, layouts={0: dnnl.aBcd8b}, entries=4)


def test_comparison_with_a_parameter_and_with_a_constant():
    """x >= a learned per-channel threshold (its gradient: zeros), and x < 0.5 (a constant
    operand of the plan, no second input)."""
    (x, threshold), dy = tied_operands((N, C, H, W), (1, C, 1, 1), CHANNELS_LAST, seed=5)
    op = BroadcastBinaryOp("gate", "greater_equal", ("threshold", (1, C, 1, 1), dnnl.acdb))
    check_op(op, x, {"gate/threshold": threshold[0]}, dy,
             lambda x, p: (x >= p["gate/threshold"][None]).astype(np.float64), CHANNELS_LAST,
             reference_grads=lambda x, p, dy: (np.zeros_like(x), {
                 "gate/threshold": np.zeros_like(p["gate/threshold"])}), numeric=False)
    for data_format in FORMATS:
        check_op(BroadcastBinaryOp("lt", "less", constant=0.5), x, {}, dy,
                 lambda x, p: (x < 0.5).astype(np.float64), data_format,
                 reference_grads=lambda x, p, dy: (np.zeros_like(x), {}), numeric=False)
