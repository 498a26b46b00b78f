"""Bad arguments to keras.random give errors that name the function, the argument and the
value; SeedGenerator's state and config behave as Keras's."""

import numpy as np
import pytest

from kiln import keras

R = keras.random


@pytest.mark.parametrize("call, message", [
    (lambda: R.normal((2.5, 3)), r"keras.random.normal: argument shape must be a tuple of "
                                 r"ints >= 0, got \(2.5, 3\)"),
    (lambda: R.uniform((2, -1)), r"keras.random.uniform: argument shape .*got \(2, -1\)"),
    (lambda: R.normal((None, 3)), r"keras.random.normal: argument shape .*got \(None, 3\)"),
    (lambda: R.truncated_normal("3"), r"truncated_normal: argument shape .*got '3'"),
    (lambda: R.normal((2,), stddev="big"), r"keras.random.normal: argument stddev must be a "
                                           r"number, got 'big'"),
    (lambda: R.uniform((2,), dtype="int32"), r"keras.random.uniform: argument dtype must be "
                                             r"a floating point dtype, got 'int32'"),
    (lambda: R.normal((2,), seed="abc"), r"keras.random.normal: argument seed must be an "
                                         r"int, a keras.random.SeedGenerator or None"),
    (lambda: R.normal((2,), seed=1.5), r"argument seed must be an int.*got 1.5"),
    (lambda: R.randint((3,), 5, 5), r"keras.random.randint: argument minval must be below "
                                    r"maxval, got minval=5, maxval=5"),
    (lambda: R.randint((3,), 9, 2), r"randint: argument minval must be below maxval"),
    (lambda: R.randint((3,), 0.5, 2), r"keras.random.randint: argument minval must be an "
                                      r"int, got 0.5"),
    (lambda: R.randint((3,), 0, 2, dtype="float32"), r"keras.random.randint: argument dtype "
                                                     r"must be an integer dtype"),
    (lambda: R.randint((3,), 0, 2**40), r"randint: arguments minval and maxval must lie in"),
    (lambda: R.categorical(np.zeros(3), 2), r"keras.random.categorical: argument logits must "
                                            r"be a 2D array"),
    (lambda: R.categorical(np.zeros((2, 3)), -1), r"categorical: argument num_samples must "
                                                  r"be an int >= 0, got -1"),
    (lambda: R.dropout(np.ones(3), 1.5), r"keras.random.dropout: argument rate must be in "
                                         r"\[0, 1\], got 1.5"),
    (lambda: R.dropout(np.ones((2, 3)), 0.5, noise_shape=(2, 2)),
     r"keras.random.dropout: argument noise_shape \(2, 2\) does not broadcast"),
    (lambda: R.dropout(np.ones((2, 3)), 0.5, noise_shape=(3,)),
     r"keras.random.dropout: argument noise_shape must be a tuple of 2"),
    (lambda: R.shuffle(np.ones((2, 3)), axis=2), r"keras.random.shuffle: argument axis must "
                                                 r"be an int in \[-2, 1\], got 2"),
    (lambda: R.shuffle(np.float32(1.0)), r"keras.random.shuffle: argument x must have at "
                                         r"least one axis"),
    (lambda: R.gamma((3,), alpha=-1.0), r"keras.random.gamma: argument alpha must be in "
                                        r"\(0.0, inf\], got -1.0"),
    (lambda: R.beta((3,), alpha=1.0, beta=0.0), r"keras.random.beta: argument beta must be"),
    (lambda: R.binomial((3,), counts=5, probabilities=1.5),
     r"keras.random.binomial: argument probabilities must be in \[0.0, 1.0\], got 1.5"),
    (lambda: R.binomial((3,), counts=2.5, probabilities=0.5),
     r"keras.random.binomial: argument counts must be whole numbers"),
    (lambda: R.gamma((3,), alpha=np.ones(4)), r"keras.random.gamma: argument alpha of shape "
                                              r"\(4,\) does not broadcast to shape \(3,\)"),
    (lambda: R.SeedGenerator(seed="x"), r"keras.random.SeedGenerator: argument seed must be "
                                        r"an int or None, got 'x'"),
])
def test_bad_arguments_name_the_function_and_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_seed_generator_state_and_config():
    generator = R.SeedGenerator(42, name="noise")
    np.testing.assert_array_equal(generator.state, [42, 0])
    assert generator.state.dtype == np.uint32
    R.normal((2,), seed=generator)
    R.dropout(np.ones(4, np.float32), 0.5, seed=generator)
    np.testing.assert_array_equal(generator.state, [42, 2])
    assert generator.get_config() == {"seed": 42, "name": "noise"}
    copy = R.SeedGenerator.from_config(generator.get_config())
    np.testing.assert_array_equal(copy.state, [42, 0])
    # an int in any form, and one beyond 32 bits wraps as Keras's uint32 state does
    np.testing.assert_array_equal(R.normal((3,), seed=np.int64(9)), R.normal((3,), seed=9))
    np.testing.assert_array_equal(R.normal((3,), seed=2**32 + 9), R.normal((3,), seed=9))


def test_shapes_as_lists_and_ints():
    assert R.uniform([2, 3], seed=1).shape == (2, 3)
    assert R.normal(4, seed=1).shape == (4,)
    assert R.normal((0, 3), seed=1).shape == (0, 3)
    assert R.normal((2,), dtype="float64", seed=1).dtype == np.float64
    assert R.randint((2,), 0, 3, dtype="int64", seed=1).dtype == np.int64
