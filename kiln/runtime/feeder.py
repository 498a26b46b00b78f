"""BatchFeeder: gathers the next training batch in a background thread while a step runs.

Two staging buffers alternate: the plan reads one (its input memory is pointed at it, no copy)
while the worker thread gathers the next batch into the other. numpy's `take` releases the GIL
and the plan's primitives and kernels run without it, so the gather overlaps the step.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..binding.memory import aligned_bytes


class BatchFeeder:
    """Args:
        x: a float32 array (samples first), or a list of them (one per model input).
        y: float32 labels (samples first).
        order: sample indices of the epoch, in order.
        batch_size: samples per step (the last batch may be smaller).
    """

    def __init__(self, x, y, order, batch_size):
        self.several = isinstance(x, (list, tuple))
        self.xs = list(x) if self.several else [x]
        self.y, self.order, self.batch_size = y, order, batch_size
        self.steps = -(-len(order) // batch_size)
        self._x_stage = [[self._staging(x) for x in self.xs] for _ in range(2)]
        self._y_stage = [np.empty((batch_size, *y.shape[1:]), np.float32) for _ in range(2)]
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-feeder")
        self._pending = self._pool.submit(self._gather, 0) if self.steps else None

    def _staging(self, x):
        shape = (self.batch_size, *x.shape[1:])
        return aligned_bytes(int(np.prod(shape)) * 4).view(np.float32).reshape(shape)

    def _gather(self, step):
        index = self.order[step * self.batch_size:(step + 1) * self.batch_size]
        slot = step % 2
        x_out = [stage[:len(index)] for stage in self._x_stage[slot]]
        y_out = self._y_stage[slot][:len(index)]
        for x, out in zip(self.xs, x_out, strict=True):
            np.take(x, index, axis=0, out=out)
        np.take(self.y, index, axis=0, out=y_out)
        return (x_out if self.several else x_out[0]), y_out

    def batches(self):
        """Yields (x, y) views of the staged batch; the next one is gathered meanwhile. A
        yielded batch stays valid until the following one is requested."""
        try:
            for step in range(self.steps):
                batch = self._pending.result()
                if step + 1 < self.steps:
                    self._pending = self._pool.submit(self._gather, step + 1)
                yield batch
        finally:
            self._pool.shutdown(wait=True)
