"""The mask ops against numpy: StepMaskOp (any value of a step differs from the padding
value; token ids compared as ints) and MaskingOp (masked steps set to 0, their gradient
blocked, as the gradient of Keras's where)."""

import numpy as np
import pytest
from op_checker import OpHarness, check_op

from kiln.ops.masks import MaskingOp, StepMaskOp


def sequences(value=0.0, seed=0):
    x = np.random.default_rng(seed).standard_normal((3, 4, 2)).astype(np.float32)
    x[0, 2:] = value
    x[2, 1] = value
    x[1, 0, 0] = value  # one feature equal to the value does not mask the step
    return x


def keep(x, value):
    return np.any(x != value, axis=-1)


@pytest.mark.parametrize("value", [0.0, 2.5])
def test_step_mask_of_a_sequence(value):
    x = sequences(value)
    harness = OpHarness(StepMaskOp("m", value), x, training=False)
    np.testing.assert_array_equal(harness.forward(), keep(x, value).astype(np.float32))


def test_step_mask_of_token_ids_int_and_float():
    ids = np.array([[3, 0, 7, 0], [0, 0, 0, 1]])
    for given in (ids.astype(np.int32), ids.astype(np.float32)):
        harness = OpHarness(StepMaskOp("m", 0), given, training=False)
        np.testing.assert_array_equal(harness.forward(), (ids != 0).astype(np.float32))


@pytest.mark.parametrize("value", [0.0, -1.0])
def test_masking_forward_and_gradient(value):
    x = sequences(value, seed=1)
    dy = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)

    def reference(x64, params):
        return np.where(keep(x64, value)[..., None], x64, 0.0)

    def reference_grads(x64, params, dy64):
        return np.where(keep(x64, value)[..., None], dy64, 0.0), {}

    # no central differences: where(x != v, x, 0) equals x on both sides of a masked entry,
    # so its numeric slope is 1 where Keras's gradient (and kiln's) through the mask is 0
    check_op(MaskingOp("masking", value), x, {}, dy, reference,
             reference_grads=reference_grads, numeric=False)


def masked_mean_case(data_format):
    rng = np.random.default_rng(3)
    mask = np.array([[1, 1, 0, 0], [1, 0, 1, 1], [0, 1, 0, 0]], np.float32)
    x = rng.standard_normal((3, 4, 2) if data_format == "channels_last" else (3, 2, 4))
    return x.astype(np.float32), mask


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_masked_step_mean_and_its_gradient(data_format):
    from multi_input_checker import check_multi_input_op

    from kiln.ops.masks import MaskedStepMeanOp

    x, mask = masked_mean_case(data_format)
    dy = np.random.default_rng(4).standard_normal((3, 2)).astype(np.float32)
    steps_axis = 1 if data_format == "channels_last" else 2
    expand = 2 if data_format == "channels_last" else 1

    def reference(xs, params):
        sequence, weights = xs
        weights = np.expand_dims(weights, expand)
        return (sequence * weights).sum(axis=steps_axis) / weights.sum(axis=steps_axis)

    def reference_grads(xs, params, dy64):
        weights = np.expand_dims(xs[1], expand)
        share = weights / weights.sum(axis=steps_axis, keepdims=True)
        return [np.expand_dims(dy64, steps_axis) * share, None]

    check_multi_input_op(MaskedStepMeanOp("pool", data_format), [x, mask], dy, reference,
                         reference_grads=reference_grads, need_input_grad=[True, False])
