"""keras.utils.pad_sequences (Keras 2: keras.preprocessing.sequence.pad_sequences).

The same steps as Keras 3's, so the results (values, dtype, shape, which end is cut or padded)
are Keras's; the difference is that a bad `padding` / `truncating` is reported up front, where
Keras only notices it at the first non-empty sequence.
"""

import numpy as np


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Pads (and cuts) sequences to one length.

    Args:
        sequences: List (or object array) of sequences; each a list or array whose items are
            scalars or equally shaped arrays.
        maxlen: Length of the result; None: the longest sequence's.
        dtype: Type of the result; `object` or a string dtype for strings.
        padding: `"pre"` or `"post"`: pad before or after each sequence.
        truncating: `"pre"` or `"post"`: cut longer sequences at the start or at the end.
        value: Padding value (a string needs `dtype=object` or a string dtype).

    Returns:
        A numpy array shaped `(len(sequences), maxlen) + item_shape`.

    Raises:
        ValueError: `sequences` or one of them is not a sequence, items of different shapes,
            a string `value` with a non-string `dtype`, or a bad `padding` / `truncating`.

    Example:

        >>> pad_sequences([[1], [2, 3], [4, 5, 6]], maxlen=2)
        array([[0, 1],
               [2, 3],
               [5, 6]], dtype=int32)
    """
    where = "pad_sequences"
    if not hasattr(sequences, "__len__"):
        raise ValueError(f"{where}: argument sequences must be a list of sequences, got "
                         f"{type(sequences).__name__}")
    if padding not in ("pre", "post"):
        raise ValueError(f"{where}: argument padding must be 'pre' or 'post', got {padding!r}")
    if truncating not in ("pre", "post"):
        raise ValueError(f"{where}: argument truncating must be 'pre' or 'post', got "
                         f"{truncating!r}")
    num_samples = len(sequences)

    # The item shape comes from the first non-empty sequence; the others are checked below.
    lengths = []
    sample_shape = ()
    found_shape = False
    for index, x in enumerate(sequences):
        try:
            lengths.append(len(x))
        except TypeError as err:
            raise ValueError(f"{where}: argument sequences must hold sequences, item {index} "
                             f"is {x!r}") from err
        if not found_shape and len(x):
            sample_shape = np.asarray(x).shape[1:]
            found_shape = True

    if maxlen is None:
        if not lengths:
            raise ValueError(f"{where}: argument maxlen is needed when sequences is empty")
        maxlen = np.max(lengths)

    is_dtype_str = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.bytes_)
    if isinstance(value, str) and dtype is not object and not is_dtype_str:
        raise ValueError(f"{where}: argument dtype {dtype} cannot hold the string value "
                         f"{value!r}; use dtype=object for variable length strings")

    x = np.full((num_samples, maxlen) + sample_shape, value, dtype=dtype)
    for index, s in enumerate(sequences):
        if not len(s):
            continue
        trunc = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        trunc = np.asarray(trunc, dtype=dtype)
        if trunc.shape[1:] != sample_shape:
            raise ValueError(f"{where}: sequence {index} has items of shape {trunc.shape[1:]}, "
                             f"the first non-empty sequence's are {sample_shape}")
        if padding == "post":
            x[index, :len(trunc)] = trunc
        else:
            x[index, -len(trunc):] = trunc
    return x
