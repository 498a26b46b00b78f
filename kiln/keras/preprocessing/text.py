"""Keras 2's `keras.preprocessing.text`: the word-level `Tokenizer` and its helpers.

Keras 3 dropped this module (it lived in `keras_preprocessing`); the classic scripts still
import it (reuters_mlp.py vectorizes with `Tokenizer.sequences_to_matrix`). The behaviour
follows `keras_preprocessing.text` as Keras 2 shipped it: index 0 is never a word, words are
ranked by count (ties keep first-seen order), the out-of-vocabulary token takes index 1, and
`num_words` keeps the indexes below it. Splitting texts is Python string work; turning
sequences into a matrix is one vectorized count over all samples.
"""

import hashlib
import itertools
import json
import numbers
import warnings
from collections import OrderedDict, defaultdict

import numpy as np

DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
MATRIX_MODES = ("binary", "count", "tfidf", "freq")

__all__ = ["Tokenizer", "hashing_trick", "one_hot", "text_to_word_sequence",
           "tokenizer_from_json"]


def text_to_word_sequence(text, filters=DEFAULT_FILTERS, lower=True, split=" "):
    """Splits a text into a list of words.

    Args:
        text: The input string.
        filters: Characters to remove (each is replaced by `split`).
        lower: Whether to lowercase the text first.
        split: The word separator.

    Returns:
        The list of non-empty words.
    """
    if lower:
        text = text.lower()
    text = text.translate(str.maketrans({c: split for c in filters}))
    return [word for word in text.split(split) if word]


def hashing_trick(text, n, hash_function=None, filters=DEFAULT_FILTERS, lower=True, split=" "):
    """Turns a text into word indexes in `[1, n)` by hashing each word.

    Args:
        text: The input string.
        n: Size of the hashing space; indexes are `hash(word) % (n - 1) + 1`, so 0 is never
            used.
        hash_function: None (Python's `hash`, which varies between processes unless
            PYTHONHASHSEED is set), `"md5"` (stable), or a callable taking a word.
        filters, lower, split: As in `text_to_word_sequence`.

    Returns:
        A list of int indexes, one per word.
    """
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(word):
            return int(hashlib.md5(word.encode()).hexdigest(), 16)
    words = text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    return [hash_function(word) % (n - 1) + 1 for word in words]


def one_hot(text, n, filters=DEFAULT_FILTERS, lower=True, split=" "):
    """`hashing_trick` with Python's `hash` (Keras's name: not a one-hot matrix)."""
    return hashing_trick(text, n, hash_function=hash, filters=filters, lower=lower,
                         split=split)


class Tokenizer:
    """Vectorizes texts into word-index sequences or document-term matrices.

    Args:
        num_words: Keep only the words of index below `num_words` (the `num_words - 1` most
            frequent) when converting; None keeps all. Fitting always indexes every word.
        filters: Characters removed from the texts.
        lower: Whether to lowercase the texts.
        split: The word separator.
        char_level: Every character is a token.
        oov_token: If given, it takes index 1 and replaces unknown (and cut) words in
            `texts_to_sequences`; otherwise such words are dropped.
        document_count: Starting count of fitted documents (used when restoring).
        **kwargs: Keras 1's `nb_words` (for `num_words`, with a warning); anything else is
            an error.

    Attributes:
        word_index: `{word: index}` from 1, most frequent first.
        index_word: The reverse mapping.
        word_counts: `{word: count}` in first-seen order.
        word_docs: `{word: number of documents containing it}`.
        index_docs: `{index: number of documents containing it}`.
        document_count: Number of documents fitted.
    """

    def __init__(self, num_words=None, filters=DEFAULT_FILTERS, lower=True, split=" ",
                 char_level=False, oov_token=None, document_count=0, **kwargs):
        if "nb_words" in kwargs:
            warnings.warn("Tokenizer: argument nb_words was renamed num_words", stacklevel=2)
            num_words = kwargs.pop("nb_words")
        if kwargs:
            raise TypeError(f"Tokenizer: unrecognized keyword arguments {sorted(kwargs)}")
        if num_words is not None and (not isinstance(num_words, numbers.Integral)
                                      or isinstance(num_words, bool) or num_words < 1):
            raise ValueError(f"Tokenizer: argument num_words must be None or a positive "
                             f"integer, got {num_words!r}")
        self.word_counts = OrderedDict()
        self.word_docs = defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs = defaultdict(int)
        self.word_index = {}
        self.index_word = {}

    def _tokens(self, text):
        """The tokens of one text: a list of tokens or a string at char level is used as
        is (lowercased if asked), a string is split into words."""
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        return text_to_word_sequence(text, self.filters, self.lower, self.split)

    def fit_on_texts(self, texts):
        """Updates the vocabulary from a list of texts (strings, or lists of tokens)."""
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for token in tokens:
                self.word_counts[token] = self.word_counts.get(token, 0) + 1
            for token in set(tokens):
                self.word_docs[token] += 1
        # sorted() is stable: words of equal count keep their first-seen order
        ranked = sorted(self.word_counts.items(), key=lambda item: item[1], reverse=True)
        vocabulary = [] if self.oov_token is None else [self.oov_token]
        vocabulary.extend(word for word, _ in ranked)
        self.word_index = {word: index for index, word in enumerate(vocabulary, start=1)}
        self.index_word = {index: word for word, index in self.word_index.items()}
        for word, count in self.word_docs.items():
            self.index_docs[self.word_index[word]] = count

    def fit_on_sequences(self, sequences):
        """Updates the document counts (for tfidf) from lists of word indexes."""
        self.document_count += len(sequences)
        for sequence in sequences:
            for index in set(sequence):
                self.index_docs[index] += 1

    def texts_to_sequences_generator(self, texts):
        """Yields each text as a list of word indexes (see `texts_to_sequences`)."""
        oov_index = self.word_index.get(self.oov_token)
        for text in texts:
            sequence = []
            for token in self._tokens(text):
                index = self.word_index.get(token)
                if index is not None and not (self.num_words and index >= self.num_words):
                    sequence.append(index)
                elif oov_index is not None:
                    sequence.append(oov_index)
            yield sequence

    def texts_to_sequences(self, texts):
        """Returns each text as a list of word indexes; unknown words and those of index
        `>= num_words` become the oov index, or are dropped without an oov token."""
        return list(self.texts_to_sequences_generator(texts))

    def sequences_to_texts_generator(self, sequences):
        """Yields each sequence of indexes as a text (see `sequences_to_texts`)."""
        oov_index = self.word_index.get(self.oov_token)
        for sequence in sequences:
            words = []
            for index in sequence:
                word = self.index_word.get(index)
                if word is not None and not (self.num_words and index >= self.num_words):
                    words.append(word)
                elif oov_index is not None:
                    words.append(self.index_word[oov_index])
            yield " ".join(words)

    def sequences_to_texts(self, sequences):
        """Returns each sequence of word indexes as a space-joined text."""
        return list(self.sequences_to_texts_generator(sequences))

    def texts_to_matrix(self, texts, mode="binary"):
        """`sequences_to_matrix(texts_to_sequences(texts), mode)`."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences, mode="binary"):
        """Turns lists of word indexes into a `(len(sequences), num_words)` float64 matrix.

        Indexes `>= num_words` are ignored. Modes: `"binary"` (1 where the word occurs),
        `"count"`, `"freq"` (count / sequence length, the ignored words included, as Keras)
        and `"tfidf"` (`(1 + log(count)) * log(1 + documents / (1 + documents with the
        word))`, needing a fit first).

        Raises:
            ValueError: unknown mode, no `num_words` and nothing fitted, tfidf before any
                fit, or a negative index.
        """
        if mode not in MATRIX_MODES:
            raise ValueError(f"Tokenizer.sequences_to_matrix: argument mode must be one of "
                             f"{MATRIX_MODES}, got {mode!r}")
        if self.num_words:
            width = self.num_words
        elif self.word_index:
            width = len(self.word_index) + 1
        else:
            raise ValueError("Tokenizer.sequences_to_matrix: give the Tokenizer a num_words "
                             "argument or fit it on some texts first")
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Tokenizer.sequences_to_matrix: mode='tfidf' needs a fit on "
                             "some data first (fit_on_texts or fit_on_sequences)")
        lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
        flat = np.fromiter(itertools.chain.from_iterable(sequences), dtype=np.int64,
                           count=int(lengths.sum()))
        if flat.size and flat.min() < 0:
            raise ValueError(f"Tokenizer.sequences_to_matrix: sequences must hold word "
                             f"indexes >= 0, got {int(flat.min())}")
        rows = np.repeat(np.arange(len(lengths)), lengths)
        kept = flat < width
        counts = np.bincount(rows[kept] * width + flat[kept],
                             minlength=len(lengths) * width).reshape(len(lengths), width)
        counts = counts.astype(np.float64)
        if mode == "count":
            return counts
        if mode == "binary":
            return (counts > 0).astype(np.float64)
        if mode == "freq":
            return counts / np.maximum(lengths, 1)[:, None]
        documents_with = np.zeros(width)
        for index, count in self.index_docs.items():
            if 0 <= index < width:
                documents_with[index] = count
        idf = np.log(1 + self.document_count / (1 + documents_with))
        with np.errstate(divide="ignore"):
            tf = np.where(counts > 0, 1 + np.log(counts), 0.0)
        return tf * idf

    def get_config(self):
        """The settings and the fitted state, the dictionaries as JSON strings (Keras's
        layout, so `tokenizer_from_json` reads Keras's files too)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split, "char_level": self.char_level,
                "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs):
        """A JSON string `{"class_name": "Tokenizer", "config": ...}`; kwargs go to
        `json.dumps`."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


def tokenizer_from_json(json_string):
    """Rebuilds a `Tokenizer` from `Tokenizer.to_json()` output (JSON only, nothing run)."""
    config = dict(json.loads(json_string).get("config"))
    state = {key: json.loads(config.pop(key))
             for key in ("word_counts", "word_docs", "index_docs", "index_word", "word_index")}
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = OrderedDict(state["word_counts"])
    tokenizer.word_docs = defaultdict(int, state["word_docs"])
    # JSON object keys are strings: the integer-keyed dictionaries get their ints back
    tokenizer.index_docs = defaultdict(int, {int(k): v for k, v in state["index_docs"].items()})
    tokenizer.index_word = {int(k): v for k, v in state["index_word"].items()}
    tokenizer.word_index = state["word_index"]
    return tokenizer
