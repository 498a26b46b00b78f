"""keras.preprocessing.text (Keras 2's Tokenizer and helpers) against hand-computed values.

The reference, `keras_preprocessing.text`, is not installed, so every expectation below is
worked out by hand from its documented rules: index 0 is reserved, words ranked by count with
ties in first-seen order, the oov token at index 1, `num_words` keeps indexes below it, and
tfidf = (1 + ln count) * ln(1 + documents / (1 + documents with the word)).
"""

import hashlib
import json
import math

import numpy as np
import pytest

from kiln.keras.preprocessing import text
from kiln.keras.preprocessing.text import (
    Tokenizer,
    hashing_trick,
    one_hot,
    text_to_word_sequence,
    tokenizer_from_json,
)

TEXTS = ["The cat sat.", "The dog, the cat!", "A bird"]
# counts: the 3, cat 2, then sat / dog / a / bird once each, in first-seen order
WORD_INDEX = {"the": 1, "cat": 2, "sat": 3, "dog": 4, "a": 5, "bird": 6}


def fitted(**kwargs):
    tokenizer = Tokenizer(**kwargs)
    tokenizer.fit_on_texts(TEXTS)
    return tokenizer


def test_text_to_word_sequence_filters_lowers_and_splits():
    assert text_to_word_sequence("Hello, World!\tfoo--bar") == ["hello", "world", "foo", "bar"]
    assert text_to_word_sequence("Hello World", lower=False) == ["Hello", "World"]
    assert text_to_word_sequence("a,b,,c", filters="", split=",") == ["a", "b", "c"]
    assert text_to_word_sequence("x.y", filters="") == ["x.y"]


def test_fit_on_texts_ranks_words_by_count_then_first_seen():
    tokenizer = fitted()
    assert tokenizer.word_index == WORD_INDEX
    assert tokenizer.index_word == {i: w for w, i in WORD_INDEX.items()}
    assert list(tokenizer.word_counts.items()) == [("the", 3), ("cat", 2), ("sat", 1),
                                                   ("dog", 1), ("a", 1), ("bird", 1)]
    assert dict(tokenizer.word_docs) == {"the": 2, "cat": 2, "sat": 1, "dog": 1, "a": 1,
                                         "bird": 1}
    assert dict(tokenizer.index_docs) == {1: 2, 2: 2, 3: 1, 4: 1, 5: 1, 6: 1}
    assert tokenizer.document_count == 3


def test_oov_token_takes_index_one():
    tokenizer = fitted(oov_token="<unk>")
    assert tokenizer.word_index == {"<unk>": 1, **{w: i + 1 for w, i in WORD_INDEX.items()}}
    assert tokenizer.texts_to_sequences(["the fish"]) == [[2, 1]]


def test_texts_to_sequences_num_words_and_unknown_words():
    assert fitted().texts_to_sequences(["the cat ate the fish", ""]) == [[1, 2, 1], []]
    # num_words=3 keeps indexes 1 and 2; without an oov token the others are dropped
    assert fitted(num_words=3).texts_to_sequences(["sat dog the"]) == [[1]]
    # with one, cut and unknown words both become index 1 (<unk> 1, the 2, cat 3, sat 4)
    assert fitted(num_words=4, oov_token="<unk>").texts_to_sequences(
        ["dog the fish sat"]) == [[1, 2, 1, 1]]


def test_sequences_to_texts_inverts_texts_to_sequences():
    tokenizer = fitted(num_words=4, oov_token="<unk>")
    assert tokenizer.sequences_to_texts([[2, 3, 9, 5]]) == ["the cat <unk> <unk>"]
    assert fitted().sequences_to_texts([[1, 6, 99]]) == ["the bird"]


def test_char_level_and_token_lists():
    tokenizer = Tokenizer(char_level=True)
    tokenizer.fit_on_texts(["abca"])
    assert tokenizer.word_index == {"a": 1, "b": 2, "c": 3}
    assert tokenizer.texts_to_sequences(["Cab"]) == [[3, 1, 2]]
    tokenizer = Tokenizer()
    tokenizer.fit_on_texts([["Foo", "bar"], ["bar"]])
    assert tokenizer.word_index == {"bar": 1, "foo": 2}


SEQUENCES = [[1, 1, 2], [5, 3], []]  # with num_words=4, index 5 is ignored


@pytest.mark.parametrize("mode, expected", [
    ("binary", [[0, 1, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]]),
    ("count", [[0, 2, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]]),
    # freq divides by the whole length, the ignored index included
    ("freq", [[0, 2 / 3, 1 / 3, 0], [0, 0, 0, 1 / 2], [0, 0, 0, 0]]),
])
def test_sequences_to_matrix_modes(mode, expected):
    got = Tokenizer(num_words=4).sequences_to_matrix(SEQUENCES, mode=mode)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)


def test_tfidf_uses_the_fitted_document_counts():
    tokenizer = fitted()  # 3 documents; "the" (1) and "cat" (2) in 2, "sat" (3) in 1
    got = tokenizer.sequences_to_matrix([[1, 1, 2], [3]], mode="tfidf")
    expected = np.zeros((2, 7))
    expected[0, 1] = (1 + math.log(2)) * math.log(1 + 3 / 3)
    expected[0, 2] = math.log(1 + 3 / 3)
    expected[1, 3] = math.log(1 + 3 / 2)
    np.testing.assert_allclose(got, expected, rtol=1e-15)


def test_texts_to_matrix_width_is_vocabulary_plus_one_without_num_words():
    got = fitted().texts_to_matrix(["the the bird", "nothing known"], mode="count")
    np.testing.assert_array_equal(got, [[0, 2, 0, 0, 0, 0, 1], [0] * 7])


def test_sequences_to_matrix_takes_the_object_arrays_datasets_return():
    x = np.empty(2, dtype=object)
    x[0], x[1] = [1, 3, 3], [2]
    got = Tokenizer(num_words=3).sequences_to_matrix(x, mode="binary")
    np.testing.assert_array_equal(got, [[0, 1, 0], [0, 0, 1]])


def test_json_round_trip_keeps_the_fitted_state():
    tokenizer = fitted(num_words=5, oov_token="<unk>")
    restored = tokenizer_from_json(tokenizer.to_json())
    assert type(restored) is Tokenizer
    assert restored.word_index == tokenizer.word_index
    assert restored.index_word == tokenizer.index_word
    assert dict(restored.index_docs) == dict(tokenizer.index_docs)
    assert (restored.num_words, restored.oov_token, restored.document_count) == (5, "<unk>", 3)
    np.testing.assert_array_equal(restored.texts_to_matrix(TEXTS, mode="tfidf"),
                                  tokenizer.texts_to_matrix(TEXTS, mode="tfidf"))
    config = json.loads(tokenizer.to_json())
    assert config["class_name"] == "Tokenizer"
    assert json.loads(config["config"]["word_index"]) == tokenizer.word_index


def test_hashing_trick_and_one_hot_stay_in_one_to_n():
    md5 = hashing_trick("Apple, pear apple", 7, hash_function="md5")
    apple = int(hashlib.md5(b"apple").hexdigest(), 16) % 6 + 1
    pear = int(hashlib.md5(b"pear").hexdigest(), 16) % 6 + 1
    assert md5 == [apple, pear, apple]
    assert hashing_trick("a b", 3, hash_function=len) == [2, 2]
    indexes = one_hot("one two one three", 10)
    assert len(indexes) == 4 and indexes[0] == indexes[2]
    assert all(1 <= i < 10 for i in indexes)


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="mode"):
        Tokenizer(num_words=3).sequences_to_matrix([[1]], mode="onehot")
    with pytest.raises(ValueError, match="num_words"):
        Tokenizer().sequences_to_matrix([[1]])
    with pytest.raises(ValueError, match="tfidf"):
        Tokenizer(num_words=3).sequences_to_matrix([[1]], mode="tfidf")
    with pytest.raises(ValueError, match="num_words"):
        Tokenizer(num_words=0)
    with pytest.raises(ValueError, match=">= 0"):
        Tokenizer(num_words=3).sequences_to_matrix([[-1]])
    with pytest.raises(TypeError, match="num_word"):
        Tokenizer(num_word=3)
    with pytest.warns(UserWarning, match="nb_words"):
        assert Tokenizer(nb_words=7).num_words == 7


def test_module_exports():
    assert set(text.__all__) >= {"Tokenizer", "text_to_word_sequence", "one_hot",
                                 "hashing_trick", "tokenizer_from_json"}
