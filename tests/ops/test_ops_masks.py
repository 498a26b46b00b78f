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
