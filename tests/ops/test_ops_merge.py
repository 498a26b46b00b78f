"""kiln.ops.merge (AddOp, SubtractOp, MultiplyOp, AverageOp, MaximumOp, MinimumOp) and
kiln.ops.concatenate.ConcatenateOp: forward and every input gradient against float64 numpy
references and central differences, inputs in mixed layouts, bf16, shape errors, and the
outputs and gradients of real Keras 3 (JAX backend) merge layers."""

import numpy as np
import pytest
from multi_input_checker import MultiInputHarness, check_multi_input_op
from op_checker import (
    CHANNELS_FIRST,
    CHANNELS_LAST,
    activation_backward,
    activation_forward,
    conv2d_reference,
)

from kiln.binding import constants as dnnl
from kiln.binding.errors import DnnlError
from kiln.binding.memory import Memory, MemoryDesc
from kiln.binding.reorder import reorder_now
from kiln.keras import mixed_precision
from kiln.ops.concatenate import ConcatenateOp
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.merge import AddOp, AverageOp, MaximumOp, MinimumOp, MultiplyOp, SubtractOp
from kiln.ops.tensor import Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]
SHAPES = {"2d": (3, 7), "4d": (2, 4, 5, 3)}  # Keras shapes (channels_last for 4D)


def keras_shape(kind, data_format, channels=None):
    shape = list(SHAPES[kind])
    if channels is not None:
        shape[-1] = channels
    if kind == "4d" and data_format == CHANNELS_FIRST:
        shape = [shape[0], shape[3], shape[1], shape[2]]
    return tuple(shape)


def distinct_inputs(count, shape, seed, spread=1.0):
    """`count` arrays whose values are all different (gaps of at least 0.01 * spread), so
    max / min have one winner per element that a small perturbation does not change."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    values = (rng.permutation(count * size) * 0.01 - 0.005 * count * size) * spread
    values = values.astype(np.float32).reshape(count, *shape)
    return [values[i] for i in range(count)], rng


# -- float64 references (Keras semantics) ----------------------------------------------------

def chain_extreme(xs, dy, pick):
    """Keras' out = pick(pick(x0, x1), x2) ... and its gradient by JAX's rule for a tied
    max / min (half to each side), differentiated step by step through the chain."""
    outs = [xs[0]]
    for x in xs[1:]:
        outs.append(pick(outs[-1], x))
    if dy is None:
        return outs[-1]
    grads, carry = [None] * len(xs), dy
    for k in range(len(xs) - 1, 0, -1):
        a, b, o = outs[k - 1], xs[k], outs[k]
        grads[k] = carry * np.where(b == o, np.where(a == o, 0.5, 1.0), 0.0)
        carry = carry * np.where(a == o, np.where(b == o, 0.5, 1.0), 0.0)
    grads[0] = carry
    return outs[-1], grads


def merge_reference(kind, xs, dy=None, activation=None):
    """(output) or (output, list of input grads) of a Keras merge layer in float64."""
    n = len(xs)
    if kind in ("max", "min"):
        return chain_extreme(xs, dy, np.maximum if kind == "max" else np.minimum)
    if kind == "add":
        y = activation_forward(activation, sum(xs))
        grads = [activation_backward(activation, y, dy)] * n if dy is not None else None
    elif kind == "subtract":
        y = xs[0] - xs[1]
        grads = [dy, -dy] if dy is not None else None
    elif kind == "average":
        y = sum(xs) / n
        grads = [dy / n] * n if dy is not None else None
    elif kind == "multiply":
        y = np.prod(xs, axis=0)
        grads = ([dy * np.prod([x for j, x in enumerate(xs) if j != i], axis=0)
                  for i in range(n)] if dy is not None else None)
    return y if dy is None else (y, grads)


OPS = {"add": AddOp, "subtract": SubtractOp, "multiply": MultiplyOp, "average": AverageOp,
       "max": MaximumOp, "min": MinimumOp}


def make_op(kind, name="merge", **kw):
    return OPS[kind](name, **kw)


def check_merge(kind, xs, data_format, activation=None, **kw):
    op = make_op(kind, activation=activation) if activation else make_op(kind)
    rng = np.random.default_rng(1)
    dy = rng.normal(size=xs[0].shape).astype(np.float32)
    return check_multi_input_op(
        op, xs, dy, lambda x64, p64: merge_reference(kind, x64, activation=activation),
        data_format,
        reference_grads=lambda x64, p64, dy64: merge_reference(kind, x64, dy64, activation)[1],
        eps=1e-3, **kw)


# -- element-wise merges ---------------------------------------------------------------------

@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("rank", ["2d", "4d"])
@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("kind", list(OPS))
def test_elementwise_merge(kind, count, rank, data_format):
    if kind == "subtract" and count != 2:
        pytest.skip("Subtract takes exactly two inputs")
    xs, _ = distinct_inputs(count, keras_shape(rank, data_format), seed=count)
    result, harness = check_merge(kind, xs, data_format)
    assert len(harness.builder.forward_calls) == (1 if kind in ("add", "average") or count == 2
                                                  else count - 1)


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("data_format", FORMATS)
def test_add_relu_fused(count, data_format):
    """ResNet's add then relu: one call forward (binary add with a relu post-op for 2 or 3
    inputs), relu's derivative from the saved output backward."""
    xs, _ = distinct_inputs(count, keras_shape("4d", data_format), seed=5)
    result, harness = check_merge("add", xs, data_format, activation="relu")
    assert harness.output_tensor.activation == "relu"
    assert (result.output == 0).any() and (result.output > 0).any()
    labels = [call.label for call in harness.builder.backward_calls]
    assert labels.count("merge relu backward") == 1


def test_add_backward_hands_one_shared_buffer_to_every_input():
    xs, _ = distinct_inputs(3, (4, 6), seed=2)
    harness = MultiInputHarness(AddOp("add"), xs)
    grads = harness.input_grad_memories
    assert grads[0] is grads[1] is grads[2] is harness.dy_memory
    assert not harness.builder.writable(grads[0])
    assert harness.builder.backward_calls == []  # the identity costs nothing


def test_add_relu_backward_never_overwrites_a_shared_gradient():
    """When the output gradient is also read by someone else, relu's derivative goes into a
    buffer of the op's own."""
    builder = PlanBuilder(ParameterStore())
    memories = [Memory(MemoryDesc.with_tag((2, 5), dnnl.f32)) for _ in range(2)]
    memories[0].as_array()[:] = [-1, 2, -3, 4, -5, 6, -7, 8, -9, 10]
    output, backward = AddOp("add", activation="relu").forward(
        builder, [Tensor(m) for m in memories], [True, True])
    dy = Memory(MemoryDesc.with_tag((2, 5), dnnl.f32))
    dy.as_array()[:] = 1.0
    builder.share(dy)
    grads = backward(dy)
    builder.keep(grads[0])
    builder.finish()
    for call in builder.forward_calls + builder.backward_calls:
        call.run()
    assert grads[0] is grads[1] and grads[0] is not dy
    np.testing.assert_array_equal(dy.as_array(), 1.0)
    np.testing.assert_array_equal(grads[0].as_array(), [0, 1, 0, 1, 0, 1, 0, 1, 0, 1])


@pytest.mark.parametrize("need", [[False, True], [True, False], [False, False]])
@pytest.mark.parametrize("kind", list(OPS))
def test_only_needed_gradients(kind, need):
    xs, _ = distinct_inputs(2, (3, 4), seed=3)
    result, harness = check_merge(kind, xs, CHANNELS_LAST, need_input_grad=need)
    if not any(need):
        assert harness.builder.backward_calls == []


def conv_branch(data_format, channels=16):
    """A Conv2D with 16 filters: its output comes in oneDNN's blocked layout."""
    rng = np.random.default_rng(7)
    kernel = rng.normal(0, 0.3, size=(3, 3, 3, channels)).astype(np.float32)
    bias = rng.normal(0, 0.1, size=channels).astype(np.float32)
    op = Conv2DOp("conv", channels, (3, 3), padding="same")
    return op, {"conv/kernel": kernel, "conv/bias": bias}


@pytest.mark.parametrize("conv_input", [0, 1])
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("kind", list(OPS))
def test_merge_of_conv_output_and_plain_input(kind, data_format, conv_input):
    """One input from a Conv2D (blocked layout), one plain: computed in the first input's
    layout, the other reordered into it; gradients reach the conv's weights."""
    conv, params = conv_branch(data_format)
    image_shape = keras_shape("4d", data_format, channels=3)
    merged_shape = keras_shape("4d", data_format, channels=16)
    (image,), rng = distinct_inputs(1, image_shape, seed=11, spread=0.1)
    (plain,), _ = distinct_inputs(1, merged_shape, seed=12, spread=0.02)
    xs = [image, plain] if conv_input == 0 else [plain, image]

    def reference(x64, p64):
        conv_out = conv2d_reference(x64[conv_input], p64["conv/kernel"], p64["conv/bias"],
                                    padding="same", data_format=data_format)
        inputs = [conv_out, x64[1 - conv_input]]
        return merge_reference(kind, inputs if conv_input == 0 else inputs[::-1])

    dy = rng.normal(size=merged_shape).astype(np.float32)
    result, harness = check_multi_input_op(
        make_op(kind), xs, dy, reference, data_format, params, branches={conv_input: [conv]},
        rtol=1e-4, atol=1e-4, eps=1e-2, entries=4)
    descs = [t.memory.desc for t in harness.input_tensors]
    assert descs[0] != descs[1]  # really two layouts
    assert any("to layout" in label for label in harness.builder.reorder_labels)
    assert result.param_grads["conv/kernel"].any()


@pytest.mark.parametrize("kind", list(OPS) + ["add relu", "add sigmoid"])
def test_merge_in_blocked_layouts(kind):
    """Inputs in nChw16c and nhwc with 24 channels (a padded last block). Where oneDNN has
    only its reference binary kernel for nChw16c (CPUs without AVX-512) the op runs on flat
    views of the same bytes instead: no reference kernel in the plan (but for sigmoid, which
    would turn the zero padding into 0.5)."""
    kind, _, activation = kind.partition(" ")
    xs, _ = distinct_inputs(2, (2, 3, 4, 24), seed=13)
    _, harness = check_merge(kind, xs, CHANNELS_LAST, activation=activation or None,
                             layouts={0: dnnl.aBcd16b, 1: dnnl.acdb})
    if activation != "sigmoid":
        calls = harness.builder.forward_calls + harness.builder.backward_calls
        kernels = {call.label: call.primitive.pd.implementation for call in calls
                   if hasattr(call, "primitive")}
        assert not any(name.startswith("ref") for name in kernels.values()), kernels


# -- Maximum / Minimum ties ------------------------------------------------------------------

@pytest.mark.parametrize("count", [2, 3, 4])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_extreme_ties_split_like_jax(kind, count):
    """Small integers: many ties, 2, 3 and 4 deep. The chain reference follows JAX's rule."""
    rng = np.random.default_rng(count)
    xs = [rng.integers(0, 3, size=(64, 5)).astype(np.float32) for _ in range(count)]
    dy = rng.normal(size=(64, 5)).astype(np.float32)
    harness = MultiInputHarness(make_op(kind), xs)
    result = harness.run(xs, dy)
    y, grads = merge_reference(kind, [x.astype(np.float64) for x in xs], dy.astype(np.float64))
    np.testing.assert_array_equal(result.output, y)
    for got, expected in zip(result.input_grads, grads):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0)
    total = np.sum(result.input_grads, axis=0)
    np.testing.assert_allclose(total, dy, rtol=1e-6)  # the gradient is split, never lost


def test_extreme_shares_of_a_triple_tie():
    xs = [np.ones((1, 1), np.float32)] * 3
    result = MultiInputHarness(MaximumOp("max"), xs).run(xs, np.ones((1, 1), np.float32))
    assert [float(g[0, 0]) for g in result.input_grads] == [0.25, 0.25, 0.5]


# -- bf16 ------------------------------------------------------------------------------------

def bf16_exact(shape, seed):
    """Multiples of 1/8 in [-4, 4]: bf16 (8 significant bits) holds them and the sums of
    three of them exactly, so bf16 add, subtract, max and min are exact."""
    rng = np.random.default_rng(seed)
    return (rng.integers(-32, 33, size=shape) / 8.0).astype(np.float32)


def to_bf16_bits(x):
    """float32 values that bf16 holds exactly -> their bf16 bits."""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("kind", list(OPS) + ["concat"])
def test_bf16(kind, count):
    """bf16 activations (the builder's data type, inputs converted by reorders). oneDNN runs
    bf16 binary / sum / eltwise only on CPUs with AVX-512 (a bf16 plan is only made on CPUs
    with native bf16); concat is a copy and runs everywhere."""
    if kind == "subtract" and count != 2:
        pytest.skip("Subtract takes exactly two inputs")
    shape = (2, 3, 4, 16)
    xs = [bf16_exact(shape, seed) for seed in range(count)]
    dy = bf16_exact(shape if kind != "concat" else (2, 3, 4, 16 * count), 9)
    op = ConcatenateOp("merge", axis=1) if kind == "concat" else make_op(kind)
    try:
        harness = MultiInputHarness(op, xs, data_type=dnnl.bf16, layouts={0: dnnl.aBcd16b})
    except DnnlError as error:
        if mixed_precision.native_bf16():
            raise
        assert "'merge'" in str(error) and "bf16" in str(error)  # names the op and the type
        pytest.skip(f"oneDNN lacks a bf16 primitive on this CPU: {error}")
    assert harness.output_tensor.memory.desc.data_type == dnnl.bf16
    result = harness.run(xs, dy)
    x64, dy64 = [x.astype(np.float64) for x in xs], dy.astype(np.float64)
    if kind == "concat":
        y = np.concatenate(x64, axis=-1)
        grads = np.split(dy64, count, axis=-1)
    else:
        y, grads = merge_reference(kind, x64, dy64)
    # bf16 keeps 8 significant bits: products and averages are rounded
    tolerance = dict(rtol=1e-2, atol=1e-2) if kind in ("multiply", "average") else dict(
        rtol=0, atol=0)
    np.testing.assert_allclose(result.output, y, **tolerance)
    for got, expected in zip(result.input_grads, grads):
        np.testing.assert_allclose(got, expected, **tolerance)


@pytest.mark.parametrize("op", [AddOp("merge"), MaximumOp("merge"), ConcatenateOp("merge", 1)])
def test_f32_input_beside_a_bf16_input(op):
    """A plain f32 tensor (a model input) beside a bf16 one: computed in the first input's
    data type (f32 here), the bf16 input converted by a reorder. Concatenate hands each
    input its gradient in the input's own layout and type; the element-wise merges hand back
    f32 gradients, which a bf16 consumer reorders as it does any other layout."""
    builder = PlanBuilder(ParameterStore(), data_type=dnnl.bf16)
    xs = [bf16_exact((2, 16, 3, 3), seed) for seed in range(2)]
    memories = []
    for x, data_type in zip(xs, (dnnl.f32, dnnl.bf16)):
        plain = Memory(MemoryDesc.with_tag(x.shape, dnnl.f32, dnnl.abcd))
        plain.as_array()[:] = x.ravel()
        memory = Memory(MemoryDesc.with_tag(x.shape, data_type, dnnl.abcd))
        reorder_now(plain, memory)
        memories.append(memory)
    output, backward = op.forward(builder, [Tensor(m, CHANNELS_FIRST) for m in memories],
                                  [True, True])
    dy = Memory(output.memory.desc)
    dy.as_array()[:] = 1.0
    grads = backward(dy)
    for memory in [output.memory, *grads]:
        builder.keep(memory)
    builder.finish()
    for call in builder.forward_calls + builder.backward_calls:
        call.run()
    assert output.memory.desc.data_type == dnnl.f32
    read = Memory(MemoryDesc.with_tag(output.dims, dnnl.f32, dnnl.abcd))
    reorder_now(output.memory, read)
    expected = {"Add": xs[0] + xs[1], "Maximum": np.maximum(*xs),
                "Concatenate": np.concatenate(xs, axis=1)}[op.layer]
    np.testing.assert_array_equal(read.as_array().reshape(expected.shape), expected)
    if op.layer == "Concatenate":
        assert grads[1].desc == memories[1].desc  # each input's gradient in its own layout


@pytest.mark.parametrize("count", [2, 3])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_extreme_bf16_kernel_matches_f32_kernel(sign, count):
    """The bf16 MaximumOp / MinimumOp gradient kernel (uint16 bits widened through scratch rows,
    rounded back to nearest even) gives the f32 kernel's gradients, ties included."""
    from kiln.ops.merge import CHUNK, THREADS, extreme_backward_kernel
    size = 3 * CHUNK + 77  # several chunks and a partial one
    xs = [bf16_exact(size, seed) for seed in range(count)]
    dy = bf16_exact(size, 10) * np.float32(1.5)  # 1.5 * 2**-k stays in bf16
    # values bf16 rounds (to 8 significant bits), near the smallest normal and the largest
    dy[:5] = [1.0e-38, -3.0e38, 3.0e-3, 7.1, -1.0]
    results = []
    for bf16 in (False, True):
        convert = to_bf16_bits if bf16 else np.asarray
        grads = tuple(np.zeros(size, np.uint16 if bf16 else np.float32) for _ in xs)
        extreme_backward_kernel(convert(dy), tuple(convert(x) for x in xs), grads, bf16,
                                np.float32(sign),
                                np.zeros((THREADS, count + 3, CHUNK), np.float32))
        results.append([from_bf16_bits(g) if bf16 else g for g in grads])
    pick = np.maximum if sign > 0 else np.minimum
    _, expected = chain_extreme([x.astype(np.float64) for x in xs], dy.astype(np.float64), pick)
    assert any((xs[0] == xs[1]) & (dy != 0))  # ties are exercised
    for f32, bf16, want in zip(*results, expected):
        np.testing.assert_array_equal(f32, want.astype(np.float32))
        np.testing.assert_array_equal(bf16[5:], want[5:].astype(np.float32))
        # the first entries: bf16's input is dy truncated to bf16, its output rounded
        np.testing.assert_allclose(bf16[:5], want[:5], rtol=2.0 ** -7, atol=1e-40)


# -- Concatenate -----------------------------------------------------------------------------

def concat_reference(xs, keras_axis, dy=None):
    y = np.concatenate(xs, axis=keras_axis)
    if dy is None:
        return y
    cuts = np.cumsum([x.shape[keras_axis] for x in xs])[:-1]
    return y, np.split(dy, cuts, axis=keras_axis)


KERAS_AXIS = {(CHANNELS_LAST, 1): 3, (CHANNELS_LAST, 2): 1, (CHANNELS_LAST, 3): 2,
              (CHANNELS_FIRST, 1): 1, (CHANNELS_FIRST, 2): 2, (CHANNELS_FIRST, 3): 3}


def check_concat(xs, axis, data_format, **kw):
    keras_axis = 1 if xs[0].ndim == 2 else KERAS_AXIS[(data_format, axis)]
    rng = np.random.default_rng(2)
    dy = rng.normal(size=concat_reference(xs, keras_axis).shape).astype(np.float32)
    return check_multi_input_op(
        ConcatenateOp("concat", axis), xs, dy, lambda x64, p64: concat_reference(x64, keras_axis),
        data_format,
        reference_grads=lambda x64, p64, dy64: concat_reference(x64, keras_axis, dy64)[1],
        **kw)


@pytest.mark.parametrize("sizes", [(4, 3), (16, 16, 5)])
@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("axis", [1, 2, 3])
def test_concatenate_4d(axis, data_format, sizes):
    xs = []
    for i, size in enumerate(sizes):
        dims = [2, 3, 4, 5]  # logical (N, C, H, W)
        dims[axis] = size
        n, c, h, w = dims
        shape = (n, h, w, c) if data_format == CHANNELS_LAST else (n, c, h, w)
        xs.append(distinct_inputs(1, shape, seed=i)[0][0])
    check_concat(xs, axis, data_format)


@pytest.mark.parametrize("count", [2, 3])
def test_concatenate_2d(count):
    xs = [distinct_inputs(1, (3, 2 + i), seed=i)[0][0] for i in range(count)]
    check_concat(xs, 1, CHANNELS_LAST)
    check_concat(xs, -1, CHANNELS_LAST)


@pytest.mark.parametrize("data_format", FORMATS)
def test_concatenate_blocked_and_plain_channels(data_format):
    """nChw16c inputs of 16 and 32 channels beside an nhwc one: oneDNN's concat copies each
    into its region; backward reads each region through a sub-memory."""
    shapes = [keras_shape("4d", data_format, channels=c) for c in (16, 32, 8)]
    xs = [distinct_inputs(1, s, seed=i)[0][0] for i, s in enumerate(shapes)]
    _, harness = check_concat(xs, 1, data_format,
                              layouts={0: dnnl.aBcd16b, 1: dnnl.aBcd16b, 2: dnnl.acdb})
    labels = [call.label for call in harness.builder.backward_calls]
    assert labels == ["concat backward 0", "concat backward 1", "concat backward 2"]


@pytest.mark.parametrize("data_format", FORMATS)
def test_concatenate_conv_output_and_plain_input(data_format):
    conv, params = conv_branch(data_format)
    image_shape = keras_shape("4d", data_format, channels=3)
    (image,), rng = distinct_inputs(1, image_shape, seed=11, spread=0.1)
    (plain,), _ = distinct_inputs(1, keras_shape("4d", data_format, channels=5), seed=12)
    axis = KERAS_AXIS[(data_format, 1)]

    def reference(x64, p64):
        conv_out = conv2d_reference(x64[1], p64["conv/kernel"], p64["conv/bias"],
                                    padding="same", data_format=data_format)
        return np.concatenate([x64[0], conv_out], axis=axis)

    dy = rng.normal(size=reference([plain, image], params).shape).astype(np.float32)
    result, _ = check_multi_input_op(ConcatenateOp("concat", 1), [plain, image], dy, reference,
                                     data_format, params, branches={1: [conv]}, rtol=1e-4,
                                     atol=1e-4, eps=1e-2, entries=4)
    assert result.param_grads["conv/kernel"].any()


def test_concatenate_gradient_cut_inside_a_block():
    """An output gradient in nChw16c cut at channel 8: regions inside a block cannot be
    described, so it is reordered into a plain layout first."""
    builder = PlanBuilder(ParameterStore())
    xs = [distinct_inputs(1, (2, 8, 3, 3), seed=i)[0][0] for i in range(2)]
    memories = []
    for x in xs:
        memory = Memory(MemoryDesc.with_tag(x.shape, dnnl.f32, dnnl.abcd))
        memory.as_array()[:] = x.ravel()
        memories.append(memory)
    output, backward = ConcatenateOp("concat", 1).forward(
        builder, [Tensor(m, CHANNELS_FIRST) for m in memories], [True, True])
    dy = np.random.default_rng(0).normal(size=(2, 16, 3, 3)).astype(np.float32)
    plain_dy = Memory(MemoryDesc.with_tag(dy.shape, dnnl.f32, dnnl.abcd))
    plain_dy.as_array()[:] = dy.ravel()
    blocked_dy = Memory(MemoryDesc.with_tag(dy.shape, dnnl.f32, dnnl.aBcd16b))
    reorder_now(plain_dy, blocked_dy)
    grads = backward(blocked_dy)
    for grad in grads:
        builder.keep(grad)
    builder.finish()
    for call in builder.forward_calls + builder.backward_calls:
        call.run()
    assert "concat gradient to layout" in builder.reorder_labels
    for grad, expected in zip(grads, np.split(dy, 2, axis=1)):
        assert grad.desc == memories[0].desc
        np.testing.assert_array_equal(grad.as_array().reshape(expected.shape), expected)


# -- shape errors ----------------------------------------------------------------------------

def test_shape_mismatch_names_the_op_inputs_and_shapes():
    with pytest.raises(ValueError, match=r"Add 'add_3'.*input 0 \(1, 16, 8, 8\).*"
                                         r"input 1 \(1, 32, 8, 8\)"):
        AddOp("add_3").output_dims([(1, 16, 8, 8), (1, 32, 8, 8)])
    builder = PlanBuilder(ParameterStore())
    tensors = [Tensor(Memory(MemoryDesc.with_tag(d, dnnl.f32, dnnl.acdb)))
               for d in [(2, 16, 8, 8), (2, 16, 8, 4)]]
    # forward shows the Keras shapes
    with pytest.raises(ValueError, match=r"Maximum 'max'.*input 0 \(2, 8, 8, 16\), "
                                         r"input 1 \(2, 8, 4, 16\)"):
        MaximumOp("max").forward(builder, tensors, [True, True])
    with pytest.raises(ValueError, match="Subtract 's': takes exactly 2 inputs, got 3"):
        SubtractOp("s").output_dims([(1, 4)] * 3)
    with pytest.raises(ValueError, match="Multiply 'm': takes at least 2 inputs, got 1"):
        MultiplyOp("m").output_dims([(1, 4)])
    with pytest.raises(ValueError, match="Average 'a'.*input 0 \\(1, 4\\), input 1 "
                                         "\\(1, 4, 1, 1\\)"):
        AverageOp("a").output_dims([(1, 4), (1, 4, 1, 1)])


def test_concatenate_shapes():
    op = ConcatenateOp("cat", axis=1)
    assert op.output_dims([(1, 16, 8, 8), (1, 8, 8, 8), (1, 3, 8, 8)]) == (1, 27, 8, 8)
    assert ConcatenateOp("cat", axis=-1).output_dims([(2, 3), (2, 5)]) == (2, 8)
    with pytest.raises(ValueError, match=r"Concatenate 'cat'.*except on the concatenation "
                                         r"axis.*input 0 \(1, 16, 8, 8\), input 1 "
                                         r"\(1, 8, 4, 8\)"):
        op.output_dims([(1, 16, 8, 8), (1, 8, 4, 8)])
    with pytest.raises(ValueError, match="axis 0 is not a non-batch axis"):
        ConcatenateOp("cat", axis=0).output_dims([(1, 2), (1, 2)])


def test_data_formats_and_flattening_must_agree():
    builder = PlanBuilder(ParameterStore())
    memory = Memory(MemoryDesc.with_tag((2, 4, 3, 3), dnnl.f32, dnnl.acdb))
    with pytest.raises(ValueError, match="Add 'add'.*same data format.*input 0 channels_last"
                                         ", input 1 channels_first"):
        AddOp("add").forward(builder, [Tensor(memory, CHANNELS_LAST),
                                       Tensor(memory, CHANNELS_FIRST)], None)
    flat = Tensor(memory, flattened=True)
    dense = Tensor(Memory(MemoryDesc.with_tag((2, 36), dnnl.f32)))
    with pytest.raises(ValueError, match=r"Add 'add': cannot merge flattened 4D tensors "
                                         r"\(inputs \[0\]\) with 2D tensors"):
        AddOp("add").forward(builder, [flat, dense], None)
    with pytest.raises(ValueError, match="flattened 4D tensors"):
        ConcatenateOp("cat", 1).forward(builder, [flat, flat], None)
    with pytest.raises(ValueError, match="activation must be"):
        AddOp("add", activation="softmax")


def test_inference_plan_has_no_backward():
    xs, _ = distinct_inputs(2, (2, 3, 3, 4), seed=0)
    for op in (AddOp("a", "relu"), MaximumOp("m"), ConcatenateOp("c", 1)):
        harness = MultiInputHarness(op, xs, training=False)
        assert harness.backward_calls == [] and harness.forward(xs).shape[0] == 2


# -- against real Keras 3 --------------------------------------------------------------------

def test_outputs_and_gradients_match_keras(monkeypatch):
    """Each Keras merge layer (JAX backend) on the same inputs, ties included: the same output,
    and the same gradients of sum(output * dy) (jax.grad)."""
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # read when keras is first imported
    keras = pytest.importorskip("keras")
    jax = pytest.importorskip("jax")
    if keras.backend.backend() != "jax":
        pytest.skip("keras was imported with another backend")
    rng = np.random.default_rng(0)
    shape = (2, 4, 5, 6)  # channels_last
    # small integers: many ties for Maximum / Minimum
    xs = [rng.integers(-2, 3, size=shape).astype(np.float32) for _ in range(3)]
    cases = [(keras.layers.Add(), lambda: AddOp("add"), 3),
             (keras.layers.Subtract(), lambda: SubtractOp("sub"), 2),
             (keras.layers.Multiply(), lambda: MultiplyOp("mul"), 3),
             (keras.layers.Average(), lambda: AverageOp("avg"), 3),
             (keras.layers.Maximum(), lambda: MaximumOp("max"), 3),
             (keras.layers.Minimum(), lambda: MinimumOp("min"), 3),
             (keras.layers.Concatenate(), lambda: ConcatenateOp("cat", 1), 3),
             (keras.layers.Concatenate(axis=2), lambda: ConcatenateOp("cat", 3), 2)]
    for layer, make, count in cases:
        inputs = xs[:count]
        expected = np.asarray(layer(inputs))
        dy = rng.normal(size=expected.shape).astype(np.float32)
        keras_grads = jax.grad(lambda *a: (layer(list(a)) * dy).sum(),
                               argnums=tuple(range(count)))(*inputs)
        result = MultiInputHarness(make(), inputs).run(inputs, dy)
        name = type(layer).__name__
        np.testing.assert_allclose(result.output, expected, rtol=1e-6, err_msg=name)
        for index, (got, want) in enumerate(zip(result.input_grads, keras_grads)):
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} gradient of input {index}")
