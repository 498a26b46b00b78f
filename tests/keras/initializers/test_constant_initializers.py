"""keras.initializers' Constant, Zeros, Ones and Identity against real Keras 3 (JAX backend):
deterministic on every backend, so the values must equal Keras's exactly, in the dtype asked;
their configs both ways; Identity's 2D-only rule and its gain."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import real_keras  # noqa: E402

from kiln.keras import initializers  # noqa: E402

CASES = [  # (make(module), shape)
    (lambda m: m.Constant(3.5), (2, 3)),
    (lambda m: m.Constant(2), (4,)),
    (lambda m: m.Constant(-1.25), ()),
    (lambda m: m.Zeros(), (3, 3, 2, 4)),
    (lambda m: m.Ones(), (5,)),
    (lambda m: m.zeros(), (2, 2)),
    (lambda m: m.Identity(), (4, 4)),
    (lambda m: m.Identity(gain=2.0), (3, 5)),  # not square: ones on the main diagonal
    (lambda m: m.Identity(0.5), (5, 3)),
]


@pytest.mark.parametrize("dtype", [None, "float32", "float16"])
@pytest.mark.parametrize("make, shape", CASES)
def test_values_equal_keras(make, shape, dtype):
    keras = real_keras()
    ours = make(initializers)(shape, dtype=dtype)
    theirs = np.asarray(make(keras.initializers)(shape, dtype=dtype))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def test_integer_dtypes_as_keras():
    keras = real_keras()
    for make in (lambda m: m.Zeros(), lambda m: m.Ones(), lambda m: m.Constant(7)):
        ours = make(initializers)((2, 3), dtype="int32")
        theirs = np.asarray(make(keras.initializers)((2, 3), dtype="int32"))
        assert ours.dtype == theirs.dtype == np.int32
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("make", [
    lambda m: m.Constant(3.5), lambda m: m.Constant(2), lambda m: m.Constant(),
    lambda m: m.Zeros(), lambda m: m.Ones(), lambda m: m.Identity(), lambda m: m.ones(),
])
def test_configs_equal_keras_both_ways(make):
    keras = real_keras()
    ours = initializers.serialize(make(initializers))
    theirs = keras.initializers.serialize(make(keras.initializers))
    assert ours == theirs
    assert initializers.serialize(initializers.get(theirs)) == ours
    assert keras.initializers.serialize(keras.initializers.deserialize(ours)) == theirs


def test_numpy_scalar_constant_keeps_a_plain_config():
    made = initializers.Constant(np.float32(0.5))
    assert initializers.serialize(made)["config"] == {"value": 0.5}
    assert type(made.get_config()["value"]) is float


def test_identity_keeps_a_gain_keras_would_lose():
    """Keras 3 writes `{}` for every Identity; kiln writes the gain when it is not 1, and both
    Keras and kiln load that config back with its gain."""
    keras = real_keras()
    config = initializers.serialize(initializers.Identity(gain=2.0))
    assert config["config"] == {"gain": 2.0}
    np.testing.assert_array_equal(np.asarray(keras.initializers.deserialize(config)((2, 2))),
                                  2.0 * np.eye(2))
    np.testing.assert_array_equal(initializers.get(config)((2, 2)), 2.0 * np.eye(2))
    np.testing.assert_array_equal(initializers.get("identity")((2, 2)), np.eye(2))


@pytest.mark.parametrize("shape", [(3,), (3, 3, 2), ()])
def test_identity_refuses_other_ranks_as_keras(shape):
    keras = real_keras()
    with pytest.raises(ValueError, match="2D"):
        keras.initializers.Identity()(shape)
    with pytest.raises(ValueError, match=rf"Identity.*2D.*{len(shape)}"):
        initializers.Identity()(shape)
