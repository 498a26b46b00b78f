"""IMDB movie review sentiment, loaded like `keras.datasets.imdb`.

25,000 training and 25,000 test reviews, each a list of word indexes (words ranked by
frequency), labelled 0 (negative) or 1 (positive). The file is Keras's own `imdb.npz`
(sources in `_sequence_files`); its ragged sequences are a pickled object array, read by
kiln's own pickle interpreter, which executes nothing from the file. Everything after
reading follows Keras 3's code step by step, so the outputs are Keras's.
"""

import numpy as np

from ._sequence_files import keras1_num_words, load_arrays, load_word_index, remove_long_seq

ORIGIN_SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_MD5 = "bfafd718b763782e994055a2d397834f"


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """Loads the IMDB dataset.

    Args:
        path: Where the data is cached, relative to the Keras datasets folder.
        num_words: Keep only the `num_words` most frequent words; rarer ones become
            `oov_char`. None keeps all words.
        skip_top: The `skip_top` most frequent words also become `oov_char`.
        maxlen: Drop sequences of `maxlen` words or more (after the start character is
            added). None keeps all.
        seed: Seed of the shuffle (a `np.random.RandomState`, as Keras).
        start_char: Index prepended to every sequence (None: nothing prepended).
        oov_char: Index that replaces the words cut by `num_words` / `skip_top` (None:
            they are removed).
        index_from: Offset added to every word index.
        **kwargs: Ignored, as Keras 3 does, except Keras 1's `nb_words` (for `num_words`,
            with a warning, as Keras 2 took it).

    Returns:
        `(x_train, y_train), (x_test, y_test)`: `x_*` are object arrays of lists of ints,
        `y_*` int arrays of 0 / 1 labels.

    Raises:
        OSError: the file is not available and could not be downloaded.
        ValueError: the file is malformed or holds anything but arrays of int lists, or
            `maxlen` leaves no sequence.
    """
    num_words = keras1_num_words("imdb", num_words, kwargs)
    x_train, labels_train, x_test, labels_test = load_arrays(
        path, "imdb", "imdb.npz", ORIGIN_SHA256, ("x_train", "y_train", "x_test", "y_test"))

    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train = x_train[indices]
    labels_train = labels_train[indices]

    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test = x_test[indices]
    labels_test = labels_test[indices]

    if start_char is not None:
        x_train = [[start_char] + [w + index_from for w in x] for x in x_train]
        x_test = [[start_char] + [w + index_from for w in x] for x in x_test]
    elif index_from:
        x_train = [[w + index_from for w in x] for x in x_train]
        x_test = [[w + index_from for w in x] for x in x_test]
    else:
        x_train = [[w for w in x] for x in x_train]
        x_test = [[w for w in x] for x in x_test]

    if maxlen:
        x_train, labels_train = remove_long_seq(maxlen, x_train, labels_train)
        x_test, labels_test = remove_long_seq(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"imdb.load_data: after keeping the sequences shorter than "
                             f"maxlen={maxlen}, no sequence was kept. Increase maxlen.")

    xs = x_train + x_test
    labels = np.concatenate([labels_train, labels_test])

    if not num_words:
        num_words = max(max(x) for x in xs)

    # 0 is padding, 1 the start and 2 the out-of-vocabulary mark by default
    if oov_char is not None:
        xs = [[w if (skip_top <= w < num_words) else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]

    idx = len(x_train)
    x_train, y_train = np.array(xs[:idx], dtype="object"), labels[:idx]
    x_test, y_test = np.array(xs[idx:], dtype="object"), labels[idx:]
    return (x_train, y_train), (x_test, y_test)


def get_word_index(path="imdb_word_index.json"):
    """Returns the `{word: index}` dict of the IMDB data (add `index_from` to match
    `load_data`'s sequences)."""
    return load_word_index(path, "imdb", "imdb_word_index.json", WORD_INDEX_MD5)
