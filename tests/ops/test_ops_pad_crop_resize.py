"""ZeroPadding2DOp, Cropping2DOp (oneDNN reorders through sub-memories) and UpSampling2DOp (oneDNN
resampling) against numpy and central differences, in both formats and after a conv's blocked
layout."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness, check_op, conv2d_reference

from kiln.ops.conv2d import Conv2DOp
from kiln.ops.pad_crop import Cropping2DOp, ZeroPadding2DOp
from kiln.ops.resize import UpSampling2DOp

FORMATS = [CHANNELS_LAST, CHANNELS_FIRST]


def spatial(data_format):
    return (1, 2) if data_format == CHANNELS_LAST else (2, 3)


def pad_reference(x, amounts, data_format):
    widths = [(0, 0)] * 4
    for axis, pair in zip(spatial(data_format), amounts):
        widths[axis] = pair
    return np.pad(x, widths)


def crop_reference(x, amounts, data_format):
    index = [slice(None)] * 4
    for axis, (a, b) in zip(spatial(data_format), amounts):
        index[axis] = slice(a, x.shape[axis] - b)
    return x[tuple(index)]


def linear_adjoint(function, x, dy):
    """J^T dy of a linear function of x, from its values on the unit vectors."""
    grad = np.zeros(x.size)
    for i in range(x.size):
        unit = np.zeros(x.size)
        unit[i] = 1.0
        grad[i] = np.sum(function(unit.reshape(x.shape)) * dy)
    return grad.reshape(x.shape)


def bilinear_axis(length, factor):
    """(length * factor, length) interpolation matrix: half-pixel centres, clamped."""
    matrix = np.zeros((length * factor, length))
    for out in range(length * factor):
        source = min(max((out + 0.5) / factor - 0.5, 0.0), length - 1)
        low = int(np.floor(source))
        high = min(low + 1, length - 1)
        matrix[out, low] += 1 - (source - low)
        matrix[out, high] += source - low
    return matrix


def upsample_reference(x, size, interpolation, data_format):
    hx, wx = spatial(data_format)
    if interpolation == "nearest":
        return np.repeat(np.repeat(x, size[0], axis=hx), size[1], axis=wx)
    rows = bilinear_axis(x.shape[hx], size[0])
    cols = bilinear_axis(x.shape[wx], size[1])
    y = np.moveaxis(np.tensordot(rows, x, axes=([1], [hx])), 0, hx)
    return np.moveaxis(np.tensordot(cols, y, axes=([1], [wx])), 0, wx)


CASES = {
    "pad-1": (lambda: ZeroPadding2DOp("p", ((1, 1), (1, 1))), pad_reference, ((1, 1), (1, 1))),
    "pad-asym": (lambda: ZeroPadding2DOp("p", ((0, 2), (3, 1))), pad_reference, ((0, 2), (3, 1))),
    "crop-1": (lambda: Cropping2DOp("c", ((1, 1), (1, 1))), crop_reference, ((1, 1), (1, 1))),
    "crop-asym": (lambda: Cropping2DOp("c", ((2, 0), (1, 2))), crop_reference, ((2, 0), (1, 2))),
    "up-nearest": (lambda: UpSampling2DOp("u", (2, 3), "nearest"),
                   lambda x, a, f: upsample_reference(x, (2, 3), "nearest", f), None),
    "up-bilinear": (lambda: UpSampling2DOp("u", (2, 2), "bilinear"),
                    lambda x, a, f: upsample_reference(x, (2, 2), "bilinear", f), None),
    "up-bilinear-3x1": (lambda: UpSampling2DOp("u", (3, 1), "bilinear"),
                        lambda x, a, f: upsample_reference(x, (3, 1), "bilinear", f), None),
}


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", list(CASES))
def test_shape_op(case, data_format):
    make, ref, amounts = CASES[case]
    rng = np.random.default_rng(2)
    shape = (2, 5, 6, 3) if data_format == CHANNELS_LAST else (2, 3, 5, 6)
    x = rng.normal(size=shape).astype(np.float32)
    dy = rng.normal(size=ref(x, amounts, data_format).shape).astype(np.float32)

    def reference(x64, p64):
        return ref(x64, amounts, data_format)

    def reference_grads(x64, p64, dy64):
        return linear_adjoint(lambda v: reference(v, p64), x64, dy64), {}

    # the op is linear: its exact adjoint is the reference for the gradient
    check_op(make(), x, {}, dy, reference, data_format, reference_grads, rtol=1e-5, atol=1e-6,
             grad_rtol=1e-5, grad_atol=1e-5, numeric=False)


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("case", ["pad-asym", "crop-asym", "up-bilinear"])
def test_after_conv_in_blocked_layout_and_repeated_steps(case, data_format):
    """Behind a conv (blocked layout), run twice: the padding border and the cropped
    gradient's border stay zero from step to step."""
    make, ref, amounts = CASES[case]
    rng = np.random.default_rng(3)
    shape = (2, 7, 6, 16) if data_format == CHANNELS_LAST else (2, 16, 7, 6)
    x = rng.normal(size=shape).astype(np.float32)
    params = {"conv/kernel": rng.normal(0, 0.2, size=(3, 3, 16, 17)).astype(np.float32),
              "conv/bias": rng.normal(0, 0.1, size=17).astype(np.float32)}

    def reference(x64, p64):
        y = conv2d_reference(x64, p64["conv/kernel"], p64["conv/bias"], (1, 1), "same", "tanh",
                             data_format)
        return ref(y, amounts, data_format)

    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    dy = rng.normal(size=reference(x.astype(np.float64), p64).shape).astype(np.float32)
    ops = [Conv2DOp("conv", 17, (3, 3), padding="same", activation="tanh"), make()]
    result, harness = check_op(ops, x, params, dy, reference, data_format, rtol=1e-4,
                               atol=1e-5, eps=1e-2, entries=6)
    again = harness.run(x * 0.5, dy)
    np.testing.assert_allclose(again.output, reference(x.astype(np.float64) * 0.5, p64),
                               rtol=1e-4, atol=1e-5)


def test_crop_too_much_is_rejected():
    with pytest.raises(ValueError, match="argument cropping"):
        Cropping2DOp("c", ((3, 3), (0, 0))).output_dims((1, 2, 6, 6))


def test_inference_has_no_backward():
    x = np.ones((1, 3, 3, 2), np.float32)
    harness = OpHarness(ZeroPadding2DOp("p", ((1, 1), (1, 1))), x, training=False)
    out = harness.forward()
    assert out.shape == (1, 5, 5, 2) and out.sum() == 18 and harness.builder.backward_calls == []


def test_windows_of_equal_size_at_other_offsets_are_two_primitives():
    """A reorder primitive is made for one window offset: a crop (or padding) of the same
    size placed elsewhere must not reuse the first one's from the process cache."""
    x = np.random.default_rng(3).normal(size=(2, 5, 5, 3)).astype(np.float32)
    for kind, reference in ((Cropping2DOp, crop_reference), (ZeroPadding2DOp, pad_reference)):
        for amounts in (((1, 0), (0, 0)), ((0, 1), (0, 0))):
            harness = OpHarness(kind("w", amounts), x, {}, CHANNELS_LAST)
            np.testing.assert_array_equal(harness.forward(x),
                                          reference(x, amounts, CHANNELS_LAST))
