"""BatchFeeder: gathers the next training batch in a background thread while a step runs.

Two staging buffers alternate: the plan reads one (its input memory is pointed at it, no copy)
while the worker thread gathers the next batch into the other. numpy's `take` releases the GIL
and the plan's primitives and kernels run without it, so the gather overlaps the step.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..binding.memory import aligned_bytes


def aligned_array(shape, dtype=np.float32):
    """A zeroed array of `shape` (float32, or int32 for an input of integers) whose data
    starts on a 64-byte boundary (what a plan can point its input memory at without
    copying)."""
    dtype = np.dtype(dtype)
    return aligned_bytes(int(np.prod(shape)) * dtype.itemsize).view(dtype).reshape(shape)


class BatchFeeder:
    """Args:
        x: a float32 array (samples first), or a list of them (one per model input).
        y: float32 labels (samples first), a list of them (one per model output), or None.
        order: sample indices of the epoch, in order.
        batch_size: samples per step (the last batch may be smaller).
        sample_weight: None, or a list of float32 arrays (samples first), gathered like y.
    """

    def __init__(self, x, y, order, batch_size, sample_weight=None):
        self.several = isinstance(x, (list, tuple))
        self.xs = list(x) if self.several else [x]
        self.several_y = isinstance(y, (list, tuple))
        self.ys = [] if y is None else list(y) if self.several_y else [y]
        self.sample_weights = None if sample_weight is None else list(sample_weight)
        self.order, self.batch_size = order, batch_size
        self.steps = -(-len(order) // batch_size)
        # no batch holds more than every sample: fit(batch_size=10**9) on 64 samples stages
        # 64 (as Keras trains one batch of 64), not a billion
        rows = max(1, min(batch_size, len(order)))
        self._x_stage = [[aligned_array((rows, *x.shape[1:]), x.dtype) for x in self.xs]
                         for _ in range(2)]
        self._y_stage = [[np.empty((rows, *y.shape[1:]), np.float32) for y in self.ys]
                         for _ in range(2)]
        self._w_stage = [[np.empty((rows, *w.shape[1:]), np.float32)
                          for w in self.sample_weights or ()] for _ in range(2)]
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-feeder")
        self._pending = self._pool.submit(self._gather, 0) if self.steps else None

    def _gather(self, step):
        """(xs, ys, sample weights) of batch `step` as lists of views of staging slot step % 2."""
        index = self.order[step * self.batch_size:(step + 1) * self.batch_size]
        slot = step % 2
        gathered = []
        for sources, stages in ((self.xs, self._x_stage[slot]), (self.ys, self._y_stage[slot]),
                                (self.sample_weights or (), self._w_stage[slot])):
            outs = [stage[:len(index)] for stage in stages]
            for source, out in zip(sources, outs, strict=True):
                np.take(source, index, axis=0, out=out)
            gathered.append(outs)
        return gathered

    def batch_lists(self):
        """Yields (xs, ys, sample_weights) lists of views of the staged batch (ys is [] without
        labels, sample_weights None without weights); the next batch is gathered meanwhile. A
        yielded batch stays valid until the following one is requested."""
        try:
            for step in range(self.steps):
                xs, ys, weights = self._pending.result()
                if step + 1 < self.steps:
                    self._pending = self._pool.submit(self._gather, step + 1)
                yield xs, ys, (weights if self.sample_weights is not None else None)
        finally:
            self._pool.shutdown(wait=True)

    def batches(self):
        """Yields (x, y) as given: an array or a list for x, an array, a list or None for y."""
        for xs, ys, _ in self.batch_lists():
            y = ys if self.several_y else (ys[0] if ys else None)
            yield (xs if self.several else xs[0]), y
