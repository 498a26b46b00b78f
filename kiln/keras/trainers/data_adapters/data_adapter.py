"""What every data adapter offers the training loop, and the parts all of them share.

fit / evaluate / predict see every data source (numpy arrays, Python generators, PyDataset)
through one interface: `steps` batches an epoch (None: until the source runs out), `reset()`
at the start of fit and of each evaluate, `batches()` over one epoch of `(xs, ys,
sample_weights)` lists (continuing the pass the last epoch left, as Keras) and `close()`. Every
batch is float32, C-contiguous, and checked against what the model expects before the loop
sees it, so a bad batch raises before any weight changes. An input of integers (token ids) is
int32 instead, its ids checked against the Embedding that reads them.
"""

import numpy as np

from .epochs import Epochs


class ModelSignature:
    """What the model expects of its data; every field may be None (then it is not checked).

    Args:
        input_shapes: per-sample shape of each model input (without the batch axis).
        input_names: the names a dict `x` is read by, one per input, in input order.
        output_shapes: per-sample shape of each output; None leaves label shapes to the loss.
        output_names: the names a dict `y` / `sample_weight` is read by.
        owner: who is asking, for error messages ("fit", "evaluate", "my_model.fit", ...).
        input_contexts: per input, who reads it (e.g. "Conv2D 'conv'"), named in shape errors.
        input_hints: per input, a phrase after the expected shape ("for data_format ...").
        output_hint: a phrase after an output's expected shape.
        input_dtypes: per input, the numpy dtype the plan reads it in (float32, or int32 for
            an input of integers; other dtypes are cast as Keras casts to the input's dtype).
        input_index_limits: per input, None or (limit, reader): the input holds indices an
            Embedding `reader` ("Embedding 'embedding'") looks up, each must be in
            [0, limit) (a float truncated toward zero first, as the layer casts it).
    """

    def __init__(self, input_shapes=None, input_names=None, output_shapes=None,
                 output_names=None, owner="fit", input_contexts=None, input_hints=None,
                 output_hint="", input_dtypes=None, input_index_limits=None):
        self.input_contexts, self.input_hints = input_contexts, input_hints
        self.input_dtypes, self.input_index_limits = input_dtypes, input_index_limits
        self.output_hint = output_hint
        self.input_shapes = None if input_shapes is None else [tuple(s) for s in input_shapes]
        self.input_names = None if input_names is None else list(input_names)
        self.output_shapes = None if output_shapes is None else [tuple(s)
                                                                 for s in output_shapes]
        self.output_names = None if output_names is None else list(output_names)
        self.owner = owner

    def input_dtype(self, position):
        return np.float32 if self.input_dtypes is None else self.input_dtypes[position]

    def index_limit(self, position):
        return None if self.input_index_limits is None else self.input_index_limits[position]

    @property
    def input_count(self):
        known = self.input_shapes or self.input_names
        return None if known is None else len(known)

    @property
    def output_count(self):
        known = self.output_shapes or self.output_names
        return None if known is None else len(known)


def flatten_structure(value, count, names, argument, owner):
    """`value` (an array, a list / tuple, or a dict by name) as a list of `count` entries.

    With count None the structure decides: a list or tuple of arrays is one entry each.
    """
    if isinstance(value, dict):
        if names is None:
            return list(value.values())
        missing = [name for name in names if name not in value]
        if missing:
            raise ValueError(f"{owner}: argument {argument} has no entry for {missing}; got "
                             f"keys {sorted(value)}, expected {names}")
        return [value[name] for name in names]
    if isinstance(value, (list, tuple)):
        entries_are_arrays = len(value) > 0 and all(
            hasattr(entry, "shape") or entry is None for entry in value)
        if count is None:
            return list(value) if entries_are_arrays else [value]
        if count > 1 or (count == 1 and len(value) == 1 and entries_are_arrays):
            if len(value) != count:
                raise ValueError(f"{owner}: argument {argument} must hold {count} arrays, one "
                                 f"per model {'input' if argument.startswith('x') else 'output'}"
                                 f", got {len(value)}")
            return list(value)
    return [value]


def entry_argument(argument, position, count):
    """`x` for a one-input model, `x[1]` for the second of several."""
    return argument if count == 1 else f"{argument}[{position}]"


def class_weight_to_sample_weights(y, class_weight):
    """Per-sample weights from a {class id: weight} dict, as Keras: the class of a one-hot row
    is its argmax, of an (N,) or (N, 1) integer label its value; classes not in the dict weigh
    1."""
    labels = np.asarray(y)
    if labels.ndim > 1:
        labels = np.argmax(labels, axis=-1) if labels.shape[-1] != 1 else labels[..., 0]
    if labels.ndim > 1:  # a class per step or per pixel: Keras 3 has no weights for them
        raise ValueError(f"fit: argument class_weight needs one class per sample, got labels "
                         f"of shape {np.shape(y)} (a class per step or pixel); pass "
                         "sample_weight with one weight per step or pixel instead")
    labels = np.round(labels).astype(np.int64).reshape(len(labels))
    table = {int(key): float(value) for key, value in class_weight.items()}
    weights = np.ones(len(labels), dtype=np.float32)
    for class_id, weight in table.items():
        weights[labels == class_id] = weight
    return weights


class DataAdapter(Epochs):
    """Base of the adapters; see the module docstring for the contract and epochs.py for how
    passes over the data become epochs."""

    def close(self):
        """Stop background threads; the adapter is not used again."""
        self._drop_pass()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
