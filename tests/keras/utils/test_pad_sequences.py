"""keras.utils.pad_sequences (and Keras 2's keras.preprocessing.sequence path) against real
Keras 3: values, dtype and shape for lists, arrays and object arrays of lists, empty
sequences, strings; the same inputs rejected."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras_utils = pytest.importorskip("keras.utils")

from kiln.keras.preprocessing import sequence  # noqa: E402
from kiln.keras.utils import pad_sequences  # noqa: E402

RAGGED = [[1], [2, 3], [4, 5, 6], [], [7, 8, 9, 10, 11]]


def object_array(lists):
    array = np.empty(len(lists), dtype=object)
    for i, items in enumerate(lists):
        array[i] = items
    return array


def assert_same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kwargs", [
    {},
    {"maxlen": 3},
    {"maxlen": 8},
    {"maxlen": 3, "padding": "post"},
    {"maxlen": 3, "truncating": "post"},
    {"maxlen": 2, "padding": "post", "truncating": "post", "value": -1},
    {"dtype": "float32", "value": 0.5},
    {"dtype": "int64", "maxlen": 1},
    {"dtype": "uint8", "value": 255},
], ids=str)
@pytest.mark.parametrize("container", ["lists", "object-array", "tuples-of-arrays"])
def test_equals_keras(kwargs, container):
    sequences = {"lists": RAGGED, "object-array": object_array(RAGGED),
                 "tuples-of-arrays": tuple(np.array(s, dtype=np.int64) for s in RAGGED)}[
        container]
    assert_same(pad_sequences(sequences, **kwargs),
                keras_utils.pad_sequences(sequences, **kwargs))


def test_keras2_path_is_the_same_function():
    assert sequence.pad_sequences is pad_sequences
    assert_same(sequence.pad_sequences(RAGGED, maxlen=4),
                keras_utils.pad_sequences(RAGGED, maxlen=4))


def test_items_with_a_shape():
    rng = np.random.default_rng(0)
    sequences = [rng.standard_normal((n, 2, 3)) for n in (3, 0, 5, 1)]
    for kwargs in ({"dtype": "float32"}, {"dtype": "float64", "maxlen": 2, "value": 9.0},
                   {"dtype": "float32", "padding": "post", "truncating": "post", "maxlen": 4}):
        got = pad_sequences(sequences, **kwargs)
        assert got.shape[2:] == (2, 3)
        assert_same(got, keras_utils.pad_sequences(sequences, **kwargs))


def test_all_empty_and_no_sequences():
    assert_same(pad_sequences([[], []]), keras_utils.pad_sequences([[], []]))
    assert_same(pad_sequences([[], []], maxlen=3), keras_utils.pad_sequences([[], []], maxlen=3))
    assert_same(pad_sequences([], maxlen=3), keras_utils.pad_sequences([], maxlen=3))


def test_strings():
    words = [["a", "bb"], ["ccc"], []]
    for kwargs in ({"dtype": object, "value": ""}, {"dtype": "<U3", "value": "-"},
                   {"dtype": object, "value": "pad", "maxlen": 1, "padding": "post"}):
        assert_same(pad_sequences(words, **kwargs), keras_utils.pad_sequences(words, **kwargs))


@pytest.mark.parametrize("sequences,kwargs,message", [
    (5, {}, "argument sequences must be a list"),
    ([[1], 5], {}, "item 1 is 5"),
    ([["a"]], {"value": "x"}, "dtype int32 cannot hold the string value 'x'"),
    ([["a"]], {"value": "x", "dtype": "float32"}, "dtype=object"),
    ([[[1, 2]], [[1, 2, 3]]], {}, r"sequence 1 has items of shape \(3,\)"),
    ([[1, 2]], {"padding": "middle"}, "argument padding must be 'pre' or 'post'"),
    ([[1, 2]], {"truncating": "both"}, "argument truncating must be 'pre' or 'post'"),
    ([], {}, "argument maxlen is needed"),
])
def test_errors_like_keras(sequences, kwargs, message):
    with pytest.raises(ValueError, match=message):
        pad_sequences(sequences, **kwargs)
    with pytest.raises(ValueError):
        keras_utils.pad_sequences(sequences, **kwargs)


def test_bad_padding_is_reported_even_where_keras_does_not_look():
    """Keras checks padding only at the first non-empty sequence; kiln always."""
    assert keras_utils.pad_sequences([[]], maxlen=2, padding="middle").shape == (1, 2)
    with pytest.raises(ValueError, match="padding"):
        pad_sequences([[]], maxlen=2, padding="middle")
