"""Turning a batch a user's generator or PyDataset returned into checked, staged float32 lists.

A plan reads its input in place from 64-byte aligned float32 memory, so each batch is copied
into a ring of aligned buffers (one slot per batch that can be in flight, reused batch after
batch: nothing is allocated in steady state) and checked on the way, in the background thread
that produced it. An error names the source, the epoch, the batch, the argument and the
expected shape, and reaches the loop before the step that would have used the batch.
"""

import numpy as np

from ....runtime.feeder import aligned_array
from .batch_checks import check_finite, check_indices, check_shape, numeric_array
from .data_adapter import class_weight_to_sample_weights, entry_argument, flatten_structure


class StagingRing:
    """`slots` sets of aligned float32 buffers; a buffer grows only when a batch outgrows it
    (batches of another length or image size, for a model with None axes, reuse it too)."""

    def __init__(self, slots):
        self.slots = [{} for _ in range(slots)]

    def buffer(self, slot, key, shape, dtype=np.float32):
        """A view of `shape` (float32, or int32 for an input of integers) in slot `slot`,
        kept under `key` for the next batch."""
        shape = tuple(int(s) for s in shape)
        size = int(np.prod(shape))
        held = self.slots[slot].get(key)
        if held is None or held.size < size or held.dtype != dtype:
            held = aligned_array((size,), dtype)  # flat: any shape of this size fits
            self.slots[slot][key] = held
        return held[:size].reshape(shape)

    def stage(self, slot, key, array, dtype=np.float32):
        """`array` copied (and converted: floats for an integer input truncated, as Keras
        casts) into the slot's buffer, or itself if it already is that buffer (a source that
        wrote its batch into `buffer(...)` directly)."""
        out = self.buffer(slot, key, array.shape, dtype)
        if array.ctypes.data != out.ctypes.data or array.dtype != out.dtype:
            np.copyto(out, array, casting="unsafe")
        return out


def unpack_batch(batch, where):
    """(x, y, sample_weight) of a batch given as x, (x,), (x, y) or (x, y, sample_weight)."""
    if isinstance(batch, list):
        batch = tuple(batch)
    if not isinstance(batch, tuple):
        return batch, None, None
    if len(batch) not in (1, 2, 3):
        raise ValueError(f"{where}: a batch must be x, (x,), (x, y) or (x, y, sample_weight), "
                         f"got a tuple of {len(batch)} elements")
    return (*batch, None, None)[:3]


class BatchStandardizer:
    """Checks one raw batch and stages it: (xs, ys or None, sample_weights or None) lists."""

    def __init__(self, signature, ring, source, class_weight=None):
        self.signature, self.ring, self.source = signature, ring, source
        self.class_weight = class_weight

    def where(self, epoch, step, steps):
        of = f" of {steps}" if steps else ""
        epoch = max(epoch, 0)  # the batch fetched before the first epoch belongs to it
        return (f"{self.signature.owner}: epoch {epoch + 1}, batch {step + 1}{of} from the "
                f"{self.source}")

    def __call__(self, batch, slot, where):
        signature = self.signature
        x, y, weight = unpack_batch(batch, where)
        xs = self._arrays(x, "x", signature.input_count, signature.input_names,
                          signature.input_shapes, slot, where)
        count = len(xs[0])
        ys = None
        if y is not None:
            ys = self._arrays(y, "y", signature.output_count, signature.output_names,
                              signature.output_shapes, slot, where)
        if self.class_weight is not None:
            if weight is not None:
                raise ValueError(f"{where}: the batch has sample weights and class_weight was "
                                 "given too; pass one of them")
            if ys is None or len(ys) != 1:
                raise ValueError(f"{where}: class_weight needs one label array per batch")
            weight = class_weight_to_sample_weights(ys[0], self.class_weight)
        weights = None
        if weight is not None:
            outputs = len(ys) if ys is not None else 1
            if not isinstance(weight, (list, tuple, dict)) and outputs > 1:
                weight = [weight] * outputs
            weights = self._arrays(weight, "sample_weight", outputs, signature.output_names,
                                   None, slot, where)
        for argument, arrays in (("y", ys or ()), ("sample_weight", weights or ())):
            for position, array in enumerate(arrays):
                if len(array) != count:
                    name = entry_argument(argument, position, len(arrays))
                    raise ValueError(f"{where}: argument {name} has {len(array)} samples, x "
                                     f"has {count}")
        return xs, ys, weights

    def _arrays(self, value, argument, count, names, shapes, slot, where):
        entries = flatten_structure(value, count, names, argument, where)
        staged = []
        for position, entry in enumerate(entries):
            name = entry_argument(argument, position, len(entries))
            array = numeric_array(entry, name, where)
            if array.ndim == 0:
                raise ValueError(f"{where}: argument {name} must be an array with samples "
                                 "first, got a scalar")
            if shapes is not None:
                hints = self.signature.input_hints if argument == "x" else None
                check_shape(array, name, shapes[position], where,
                            f" {hints[position]}" if hints else "")
            if len(array) == 0:
                raise ValueError(f"{where}: argument {name} is empty (shape {array.shape}); "
                                 "expected at least one sample")
            check_finite(array, name, where)
            dtype = np.float32
            if argument == "x":
                limit = self.signature.index_limit(position)
                if limit is not None:
                    limit, reader = limit
                    check_indices(array, limit, name, where, reader)
                dtype = self.signature.input_dtype(position)
            staged.append(self.ring.stage(slot, (argument, position), array, dtype))
        return staged
