"""kiln.ops.channel_affine.ChannelAffineOp (a custom layer's x * scale + shift [+ relu], fused):
forward and gradients against float64 numpy and central differences in both data formats,
with and without relu, with only a scale or only a shift, in oneDNN's blocked layouts (also
padded), on 2D features, frozen parameters, and its argument errors."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.binding import constants as dnnl
from kiln.binding.memory import MemoryDesc
from kiln.ops.base import Op
from kiln.ops.channel_affine import ChannelAffineOp
from kiln.ops.tensor import Tensor

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


class ToLayout(Op):
    """Test-only op: the tensor reordered into a oneDNN format tag (a conv's blocked output),
    its gradient reordered back."""

    def __init__(self, tag):
        self.name, self.tag = "to_layout", tag

    def output_dims(self, dims):
        return tuple(dims)

    def forward(self, builder, x, need_input_grad=True):
        desc = MemoryDesc.with_tag(x.dims, dnnl.f32, self.tag)
        memory = builder.reorder(x.memory, desc, "to layout")
        source = x.memory.desc
        return Tensor(memory, x.data_format), (
            lambda grad: builder.reorder(grad, source, "from layout", backward=True))


def case(data_format, channels, roles, relu, spatial=(4, 3), seed=0):
    """(op, x, params, dy, reference, reference_grads) of one ChannelAffineOp."""
    rng = np.random.default_rng(seed)
    c = channels
    if spatial is None:
        shape, pshape, dims, tag, axes = (6, c), (c,), (1, c), dnnl.ab, (0,)
    elif data_format == CHANNELS_LAST:
        shape, pshape, dims, tag, axes = (2, *spatial, c), (c,), (1, c, 1, 1), dnnl.acdb, (0, 1, 2)
    else:
        shape, pshape, dims, tag, axes = (2, c, *spatial), (c, 1, 1), (1, c, 1, 1), dnnl.abcd, (
            0, 2, 3)
    operands = {role: (short, dims, tag) for role, short in roles.items()}
    op = ChannelAffineOp("affine", activation="relu" if relu else None, **operands)
    params = {f"affine/{short}": rng.normal(size=pshape).astype(np.float32)
              for short in roles.values()}
    scale_name = roles.get("scale") and f"affine/{roles['scale']}"
    shift_name = roles.get("shift") and f"affine/{roles['shift']}"
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=shape).astype(np.float32)

    def pre(x, p):
        scale = p[scale_name] if scale_name else 1.0
        return x * scale + (p[shift_name] if shift_name else 0.0)

    def reference(x, p):
        z = pre(x, p)
        return np.maximum(z, 0.0) if relu else z

    def reference_grads(x, p, dy):
        g = dy * (pre(x, p) > 0) if relu else dy
        grads = {}
        if scale_name:
            grads[scale_name] = (g * x).sum(axis=axes).reshape(pshape)
        if shift_name:
            grads[shift_name] = g.sum(axis=axes).reshape(pshape)
        return g * (p[scale_name] if scale_name else 1.0), grads

    return op, x, params, dy, reference, reference_grads


ROLES = {"scale and shift": {"scale": "scale", "shift": "bias"},
         "shift only": {"shift": "bias"}, "scale only": {"scale": "gamma"}}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("roles", list(ROLES), ids=str)
def test_matches_numpy_and_central_differences(data_format, relu, roles):
    op, x, params, dy, reference, grads = case(data_format, 5, ROLES[roles], relu)
    check_op(op, x, params, dy, reference, data_format, reference_grads=grads, rtol=1e-5,
             atol=1e-5, grad_rtol=1e-4, grad_atol=1e-4, entries=6)


@pytest.mark.parametrize("channels,tag", [(16, dnnl.aBcd8b), (32, dnnl.aBcd16b),
                                          (12, dnnl.aBcd8b)])
@pytest.mark.parametrize("relu", [False, True])
def test_blocked_layouts(channels, tag, relu):
    """After a conv: 8- or 16-lane channel blocks (12 channels: padded to 16, walked as a
    plain copy)."""
    op, x, params, dy, reference, grads = case(CHANNELS_LAST, channels, ROLES["scale and shift"],
                                               relu, seed=channels)
    check_op([ToLayout(tag), op], x, params, dy, reference, reference_grads=grads, rtol=1e-5,
             atol=1e-5, grad_rtol=1e-4, grad_atol=1e-4, numeric=False)


@pytest.mark.parametrize("layout", ["nhwc", "nchw", "nChw8c"])
@pytest.mark.parametrize("relu", [False, True])
def test_numba_forward_where_onednn_has_only_its_reference_kernel(monkeypatch, layout, relu):
    """The fallback forward (oneDNN's binary with a ref kernel for a layout), forced."""
    monkeypatch.setattr(ChannelAffineOp, "_forward_onednn", lambda *args: False)
    data_format = CHANNELS_FIRST if layout == "nchw" else CHANNELS_LAST
    op, x, params, dy, reference, grads = case(data_format, 16, ROLES["scale and shift"], relu,
                                               seed=3)
    ops = [ToLayout(dnnl.aBcd8b), op] if layout == "nChw8c" else op
    check_op(ops, x, params, dy, reference, data_format, reference_grads=grads, rtol=1e-5,
             atol=1e-5, grad_rtol=1e-4, grad_atol=1e-4, numeric=False)


@pytest.mark.parametrize("relu", [False, True])
def test_features_of_a_dense_layer(relu):
    op, x, params, dy, reference, grads = case(CHANNELS_LAST, 7, ROLES["scale and shift"], relu,
                                               spatial=None)
    check_op(op, x, params, dy, reference, reference_grads=grads, rtol=1e-5, atol=1e-5,
             grad_rtol=1e-4, grad_atol=1e-4, entries=6)


def test_long_lines_split_between_threads():
    """A 64-channel nhwc tensor large enough that the N*H*W rows are cut between threads."""
    op, x, params, dy, reference, grads = case(CHANNELS_LAST, 64, ROLES["scale and shift"],
                                               True, spatial=(24, 24), seed=3)
    check_op(op, x, params, dy, reference, reference_grads=grads, rtol=1e-5, atol=1e-5,
             grad_rtol=1e-4, grad_atol=1e-3, numeric=False)


def test_frozen_parameters_and_no_input_gradient():
    from op_checker import OpHarness
    op, x, params, dy, reference, grads = case(CHANNELS_LAST, 4, ROLES["scale and shift"], True)
    harness = OpHarness(op, x, params, frozen=("affine/scale",), need_input_grad=False)
    result = harness.run(x, dy)
    np.testing.assert_allclose(result.output, reference(x.astype(np.float64), params),
                               rtol=1e-5, atol=1e-6)
    assert result.input_grad is None
    assert set(result.param_grads) == {"affine/scale", "affine/bias"}
    expected = grads(x.astype(np.float64), params, dy.astype(np.float64))[1]
    np.testing.assert_allclose(result.param_grads["affine/bias"], expected["affine/bias"],
                               rtol=1e-4, atol=1e-4)


def test_forward_is_one_onednn_call_in_the_input_layout():
    op, x, params, dy, reference, grads = case(CHANNELS_LAST, 16, ROLES["scale and shift"], True)
    from op_checker import OpHarness, native_channel_block
    block = native_channel_block()
    harness = OpHarness([ToLayout(block), op], x, params)
    calls = [c for c in harness.forward_calls if c.label.startswith("affine")]
    assert [c.label for c in calls] == ["affine forward"]
    assert calls[0].primitive.pd.implementation.startswith("jit")
    assert harness.output_tensor.memory.desc == MemoryDesc.with_tag(
        (2, 16, 4, 3), dnnl.f32, block)


def test_argument_errors_name_the_op_and_the_argument():
    with pytest.raises(ValueError, match=r"ChannelAffine 'a'.*scale.*\(1, 4, 5, 1\)"):
        ChannelAffineOp("a", scale=("s", (1, 4, 5, 1), dnnl.abcd))
    with pytest.raises(ValueError, match=r"ChannelAffine 'a'.*activation.*'tanh'"):
        ChannelAffineOp("a", shift=("b", (1, 4, 1, 1), dnnl.abcd), activation="tanh")
    with pytest.raises(ValueError, match="needs a scale, a shift or both"):
        ChannelAffineOp("a")
    op = ChannelAffineOp("a", shift=("b", (1, 4, 1, 1), dnnl.abcd))
    with pytest.raises(ValueError, match=r"ChannelAffine 'a'.*\(2, 3, 5, 5\)"):
        op.output_dims((2, 3, 5, 5))
