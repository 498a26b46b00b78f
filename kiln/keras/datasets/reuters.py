"""Reuters newswire topics, loaded like `keras.datasets.reuters`.

11,228 newswires, each a list of word indexes (words ranked by frequency), labelled with one
of 46 topics. The file is Keras's own `reuters.npz` (sources in `_sequence_files`); its ragged
sequences are a pickled object array, read by kiln's own pickle interpreter, which executes
nothing from the file. Everything after reading follows Keras 3's code step by step, so the
outputs are Keras's.
"""

import numpy as np

from ._sequence_files import keras1_num_words, load_arrays, load_word_index, remove_long_seq

ORIGIN_SHA256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_MD5 = "4d44cc38712099c9e383dc6e5f11a921"
LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply",
    "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas",
    "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin",
    "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber", "heat", "jobs",
    "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead",
)


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3, **kwargs):
    """Loads the Reuters newswire dataset.

    Args:
        path: Where the data is cached, relative to the Keras datasets folder.
        num_words: Keep only the `num_words` most frequent words; rarer ones become
            `oov_char`. None keeps all words.
        skip_top: The `skip_top` most frequent words also become `oov_char`.
        maxlen: Drop sequences of `maxlen` words or more (after the start character is
            added). None keeps all.
        test_split: Fraction of the (shuffled) newswires that form the test set.
        seed: Seed of the shuffle (a `np.random.RandomState`, as Keras).
        start_char: Index prepended to every sequence (None: nothing prepended).
        oov_char: Index that replaces the words cut by `num_words` / `skip_top` (None:
            they are removed).
        index_from: Offset added to every word index.
        **kwargs: Only Keras 1's `nb_words` (for `num_words`, with a warning), as Keras 2
            took it; Keras 3 has no other keyword either.

    Returns:
        `(x_train, y_train), (x_test, y_test)`: `x_*` are object arrays of lists of ints,
        `y_*` int arrays of topic ids 0-45.

    Raises:
        OSError: the file is not available and could not be downloaded.
        ValueError: the file is malformed or holds anything but arrays of int lists.
    """
    num_words = keras1_num_words("reuters", num_words, kwargs)
    if kwargs:
        raise TypeError(f"reuters.load_data: unexpected keyword arguments {sorted(kwargs)}")
    xs, labels = load_arrays(path, "reuters", "reuters.npz", ORIGIN_SHA256, ("x", "y"))

    rng = np.random.RandomState(seed)
    indices = np.arange(len(xs))
    rng.shuffle(indices)
    xs = xs[indices]
    labels = labels[indices]

    if start_char is not None:
        xs = [[start_char] + [w + index_from for w in x] for x in xs]
    elif index_from:
        xs = [[w + index_from for w in x] for x in xs]

    if maxlen:
        xs, labels = remove_long_seq(maxlen, xs, labels)

    if not num_words:
        num_words = max(max(x) for x in xs)

    # 0 is padding, 1 the start and 2 the out-of-vocabulary mark by default
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]

    idx = int(len(xs) * (1 - test_split))
    x_train, y_train = np.array(xs[:idx], dtype="object"), np.array(labels[:idx])
    x_test, y_test = np.array(xs[idx:], dtype="object"), np.array(labels[idx:])
    return (x_train, y_train), (x_test, y_test)


def get_word_index(path="reuters_word_index.json"):
    """Returns the `{word: index}` dict of the Reuters data (add `index_from` to match
    `load_data`'s sequences)."""
    return load_word_index(path, "reuters", "reuters_word_index.json", WORD_INDEX_MD5)


def get_label_names():
    """Returns the 46 topic names, indexed like the labels."""
    return LABEL_NAMES
