"""The running loss takes each batch's loss as the float32 the model computes in: equal to
numpy's cast for every value, inf beyond float32's range (TerminateOnNaN relies on it), no
overflow warning."""

import warnings

import numpy as np
import pytest

from kiln.keras.trainers.batch_steps import as_float32

EDGE = 2.0**128 - 2.0**103  # the first float64 that rounds to float32 inf

VALUES = [0.0, -0.0, 1.5, -2.25, 1 / 3, 1e-46, 1e38, float(np.finfo(np.float32).max),
          EDGE - 2.0**80, EDGE, -EDGE, 1e39, -1e300, float("inf"), float("-inf")]


@pytest.mark.parametrize("value", VALUES)
def test_equals_numpys_float32_cast(value):
    with np.errstate(over="ignore"):
        expected = float(np.float32(value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = as_float32(np.float64(value))
    assert got == expected and np.signbit(got) == np.signbit(expected)


def test_nan_stays_nan():
    assert np.isnan(as_float32(np.float64("nan")))
