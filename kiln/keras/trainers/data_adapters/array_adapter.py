"""Numpy arrays: checked once up front, then gathered batch by batch by the BatchFeeder.

Everything that can be known about arrays is checked before the first step (shapes, dtypes,
sample counts, NaN / inf in one parallel pass), so the loop itself does nothing per batch but
take the staged views: `fit` on arrays runs the same gather-in-the-background path as before.
"""

import numpy as np

from ....runtime.feeder import BatchFeeder
from .batch_checks import check_finite, check_indices, check_shape, input_array, numeric_array
from .data_adapter import (
    DataAdapter,
    class_weight_to_sample_weights,
    entry_argument,
    flatten_structure,
)


def positive_int(value, argument, owner):
    """`value` as an int, or a ValueError naming the argument (batch_size=0 trained with 32)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{owner}: argument {argument} must be a positive int, got {value!r}")
    return int(value)


def _float32_arrays(value, argument, count, names, shapes, signature, contexts=None,
                    hints=None, inputs=False):
    """The entries of `value` as C-contiguous float32 arrays, their shapes checked; `hints`:
    per entry (a list) or for all (a str), a phrase after the expected shape. `inputs`: the
    entries are the model's inputs, each in its input's dtype (int32 for an input of
    integers), token ids checked against the Embedding reading them."""
    owner = signature.owner
    entries = flatten_structure(value, count, names, argument, owner)
    arrays = []
    for position, entry in enumerate(entries):
        name = entry_argument(argument, position, len(entries))
        array = numeric_array(entry, name, owner)
        if shapes is not None:
            where = contexts[position] if contexts else owner
            hint = hints if isinstance(hints, str) else hints[position] if hints else ""
            hint = f" {hint}" if hint else ""
            check_shape(array, name, shapes[position], where, hint)
        elif array.ndim == 0:
            raise ValueError(f"{owner}: argument {name} must be an array with samples first, "
                             f"got a scalar")
        if not inputs:
            arrays.append(np.ascontiguousarray(array, dtype=np.float32))
            continue
        limit = signature.index_limit(position)
        if limit is not None:
            check_finite(array, name, owner, parallel=True)
            limit, reader = limit
            check_indices(array, limit, name, owner, reader)
        arrays.append(input_array(array, signature.input_dtype(position)))
    return arrays


class ArrayDataAdapter(DataAdapter):
    """Args: as get_data_adapter; `signature` is a ModelSignature."""

    def __init__(self, x, y=None, sample_weight=None, batch_size=None, steps_per_epoch=None,
                 shuffle=True, class_weight=None, signature=None):
        owner = signature.owner
        self.xs = _float32_arrays(x, "x", signature.input_count, signature.input_names,
                                  signature.input_shapes, signature, signature.input_contexts,
                                  signature.input_hints, inputs=True)
        self.ys = None
        if y is not None:
            self.ys = _float32_arrays(y, "y", signature.output_count, signature.output_names,
                                      signature.output_shapes, signature,
                                      hints=signature.output_hint)
        self.sample_weights = self._sample_weights(sample_weight, class_weight, y, signature)
        named = [(entry_argument("x", i, len(self.xs)), a) for i, a in enumerate(self.xs)]
        named += [(entry_argument("y", i, len(self.ys)), a) for i, a in enumerate(self.ys or ())]
        named += [(entry_argument("sample_weight", i, len(self.sample_weights)), a)
                  for i, a in enumerate(self.sample_weights or ())]
        lengths = {argument: len(array) for argument, array in named}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"{owner}: x, y and sample_weight must have the same number of "
                             f"samples, got {lengths}")
        self.count = len(self.xs[0])
        if self.count == 0:
            raise ValueError(f"{owner}: argument x is empty (0 samples, shape "
                             f"{self.xs[0].shape}); expected at least one sample")
        for argument, array in named:
            check_finite(array, argument, owner, parallel=True)
        if batch_size is None:
            batch_size = -(-self.count // positive_int(steps_per_epoch, "steps_per_epoch",
                                                       owner)) if steps_per_epoch else 32
        self.batch_size = positive_int(batch_size, "batch_size", owner)
        self.num_batches = -(-self.count // self.batch_size)
        if steps_per_epoch is not None:
            self.steps_per_epoch = positive_int(steps_per_epoch, "steps_per_epoch", owner)
        if shuffle not in (True, False, "batch"):
            raise ValueError(f"{owner}: argument shuffle must be True, False or 'batch', got "
                             f"{shuffle!r}")
        self.shuffle = shuffle

    @staticmethod
    def _sample_weights(sample_weight, class_weight, y, signature):
        owner = signature.owner
        if sample_weight is not None and class_weight is not None:
            raise ValueError(f"{owner}: pass sample_weight or class_weight, not both")
        if class_weight is not None:
            if y is None:
                raise ValueError(f"{owner}: argument class_weight needs labels y")
            labels = flatten_structure(y, signature.output_count, signature.output_names, "y",
                                       owner)
            if len(labels) != 1:
                raise ValueError(f"{owner}: argument class_weight is only supported for models "
                                 f"with one output, got {len(labels)} label arrays")
            if not isinstance(class_weight, dict):
                raise ValueError(f"{owner}: argument class_weight must be a dict "
                                 f"{{class id: weight}}, got {type(class_weight).__name__}")
            return [class_weight_to_sample_weights(labels[0], class_weight)]
        if sample_weight is None:
            return None
        count = signature.output_count
        if not isinstance(sample_weight, (list, tuple, dict)) and (count or 1) > 1:
            sample_weight = [sample_weight] * count  # one per-sample weight for every output
        weights = flatten_structure(sample_weight, count, signature.output_names,
                                    "sample_weight", owner)
        arrays = []
        for position, weight in enumerate(weights):
            name = entry_argument("sample_weight", position, len(weights))
            array = numeric_array(weight, name, owner)
            if array.ndim == 0:
                raise ValueError(f"{owner}: argument {name} must have one weight per sample, "
                                 "got a scalar")
            arrays.append(np.ascontiguousarray(array, dtype=np.float32))
        return arrays

    def epoch_order(self):
        """Sample indices of the next pass, drawn from numpy's global generator (so
        keras.utils.set_random_seed fixes them) as Keras 3 draws them: one permutation of all
        samples, or with shuffle='batch' one permutation within each batch, batch by batch
        (the batches keep their order)."""
        if not self.shuffle:
            return np.arange(self.count)
        if self.shuffle == "batch":
            starts = range(0, self.count, self.batch_size)
            return np.concatenate([start + np.random.permutation(
                min(self.batch_size, self.count - start)) for start in starts])
        return np.random.permutation(self.count)

    def _new_pass(self):
        return _ArrayPass(self)


class _ArrayPass:
    """One pass over the arrays, gathered in the background by a BatchFeeder made at the
    pass's first batch: that is when Keras draws the pass's shuffle."""

    ended = False  # epochs.py never asks arrays for more batches than a pass has

    def __init__(self, adapter):
        self.adapter, self.lists = adapter, None

    def take(self, count):
        adapter = self.adapter
        if self.lists is None:
            feeder = BatchFeeder(adapter.xs, adapter.ys, adapter.epoch_order(),
                                 adapter.batch_size, adapter.sample_weights)
            self.lists = feeder.batch_lists()
        for _ in range(count):
            xs, ys, weights = next(self.lists)
            yield xs, (ys if adapter.ys is not None else None), weights

    def close(self):
        if self.lists is not None:
            self.lists.close()  # its finally stops the feeder's thread
