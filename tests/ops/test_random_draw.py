"""RandomDrawOp (keras.random inside a model): the planned kernel draws the threefry values of
the key (seed, counter) in Keras's element order whatever the input's rank and format, advances
the counter at every run (an int seed's op does not), reads only the input's batch size, and
gives the input no gradient."""

import numpy as np
import pytest
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, OpHarness

from kiln.ops.random_draw import RandomDrawOp, draw_array


@pytest.mark.parametrize("shape", [(None, 7), (None, 3, 5), (None, 4, 3, 2)])
@pytest.mark.parametrize("kind, a, b", [("normal", 1.0, 2.0), ("uniform", -1.0, 3.0),
                                        ("truncated_normal", 0.0, 1.0),
                                        ("keep_mask", 0.75, 0.0)])
def test_draws_are_the_keyed_stream_and_new_each_run(shape, kind, a, b):
    state = np.array([99, 5], np.uint64)
    x = np.random.default_rng(0).normal(size=(6, 2, 3, 4)).astype(np.float32)
    harness = OpHarness(RandomDrawOp("draw", shape, kind, a, b, state), x,
                        data_format=CHANNELS_FIRST)
    keras_shape = (6, *shape[1:])
    first, second = harness.forward(), harness.forward()
    assert first.shape == keras_shape
    np.testing.assert_array_equal(first, draw_array(keras_shape, kind, a, b, 99, 5))
    np.testing.assert_array_equal(second, draw_array(keras_shape, kind, a, b, 99, 6))
    np.testing.assert_array_equal(state, [99, 7])
    grad, _ = harness.backward(np.ones(keras_shape, np.float32))
    assert grad is None  # the draw does not depend on the input's values


def test_fixed_key_repeats_and_statistics():
    state = np.array([3, 0], np.uint64)
    x = np.zeros((400, 1), np.float32)
    harness = OpHarness(RandomDrawOp("draw", (None, 500), "normal", 0.5, 2.0, state,
                                     advance=0), x, data_format=CHANNELS_LAST, training=False)
    first = harness.forward()
    np.testing.assert_array_equal(first, harness.forward())
    assert abs(first.mean() - 0.5) < 0.02 and abs(first.std() - 2.0) < 0.02
    mask = OpHarness(RandomDrawOp("mask", (None, 500), "keep_mask", 0.25, 0.0, state), x,
                     training=False).forward()
    assert set(np.unique(mask)) == {0.0, 4.0}
    assert abs((mask > 0).mean() - 0.25) < 0.01
