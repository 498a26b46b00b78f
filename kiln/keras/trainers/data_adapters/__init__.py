"""Data adapters: one interface over every kind of data fit / evaluate / predict accept.

    adapter = get_data_adapter(x, y, batch_size=32, signature=ModelSignature(...))
    adapter.reset()
    for epoch in range(epochs):
        for xs, ys, sample_weights in adapter.batches():
            ...  # lists of float32 C-contiguous arrays (ys / sample_weights may be None)
    adapter.close()

`adapter.steps` is the number of batches an epoch is meant to have (None: until the source
runs out). An epoch continues the pass over the data where the last one stopped (epochs.py).
"""

import types

from ...utils.py_dataset import PyDataset
from .array_adapter import ArrayDataAdapter
from .data_adapter import DataAdapter, ModelSignature, class_weight_to_sample_weights
from .generator_adapter import GeneratorDataAdapter
from .py_dataset_adapter import PyDatasetAdapter


def _is_iterator(x):
    return isinstance(x, types.GeneratorType) or (
        hasattr(x, "__next__") and hasattr(x, "__iter__") and not hasattr(x, "shape"))


def _refuse(argument, kind, owner):
    raise ValueError(f"{owner}: when x is a {kind}, argument {argument} must not be given; "
                     f"the {kind} yields it as part of each batch: (x, y) or (x, y, "
                     "sample_weight)")


def get_data_adapter(x, y=None, sample_weight=None, batch_size=None, steps_per_epoch=None,
                     shuffle=True, class_weight=None, *, signature=None, workers=None,
                     use_multiprocessing=None, max_queue_size=None):
    """The adapter for `x` (numpy arrays, a Python generator or iterator, or a PyDataset).

    Args:
        x, y, sample_weight, batch_size, steps_per_epoch, shuffle, class_weight: as in
            Keras's fit (y and sample_weight only with arrays; batch_size only with arrays).
        signature: a ModelSignature (expected shapes and names; None checks only dtypes and
            finiteness).
        workers, use_multiprocessing, max_queue_size: Keras 2's fit_generator arguments;
            None takes a PyDataset's own settings (max_queue_size 10 for a generator).
    """
    signature = signature or ModelSignature()
    owner = signature.owner
    if isinstance(x, DataAdapter):
        return x
    if isinstance(x, PyDataset):
        for argument, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                _refuse(argument, "PyDataset", owner)
        return PyDatasetAdapter(x, steps_per_epoch=steps_per_epoch, shuffle=shuffle,
                                class_weight=class_weight, signature=signature,
                                workers=workers, use_multiprocessing=use_multiprocessing,
                                max_queue_size=max_queue_size)
    if _is_iterator(x):
        for argument, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                _refuse(argument, "generator", owner)
        if use_multiprocessing:
            raise ValueError(f"{owner}: use_multiprocessing=True is not supported for a "
                             "generator (one thread pulls from it; a generator cannot be "
                             "shared between processes)")
        return GeneratorDataAdapter(x, steps_per_epoch=steps_per_epoch,
                                    class_weight=class_weight, signature=signature,
                                    max_queue_size=10 if max_queue_size is None
                                    else max_queue_size)
    if x is None:
        raise ValueError(f"{owner}: argument x is required (numpy arrays, a generator or a "
                         "keras.utils.PyDataset)")
    return ArrayDataAdapter(x, y, sample_weight=sample_weight, batch_size=batch_size,
                            steps_per_epoch=steps_per_epoch, shuffle=shuffle,
                            class_weight=class_weight, signature=signature)


__all__ = ["ArrayDataAdapter", "DataAdapter", "GeneratorDataAdapter", "ModelSignature",
           "PyDatasetAdapter", "class_weight_to_sample_weights", "get_data_adapter"]
