"""BatchFeeder: gathers each training batch of numpy arrays into aligned staging buffers.

A small batch (the usual case) is gathered in the caller's thread, right before its step: on
a CPU whose cores all run the plan's OpenMP threads, a background thread takes a core from one
of them whenever it wakes, and the whole team then waits for that thread at its next barrier,
which cost fit() more than the gather itself (tens of microseconds for the bench models'
batches); starting a thread also cost every fit() call about a millisecond. A batch of
BACKGROUND_BYTES or more is gathered in a background thread while the step runs, into two
staging buffers that alternate: numpy's `take` releases the GIL and the plan's primitives and
kernels run without it, so the gather overlaps the step.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..binding.memory import aligned_bytes

#: bytes per batch (inputs, labels, weights) from which the gather runs in a background thread
BACKGROUND_BYTES = 4 << 20


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
        background: gather in a background thread; None: when a batch holds
            BACKGROUND_BYTES or more.
    """

    def __init__(self, x, y, order, batch_size, sample_weight=None, background=None):
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
        sources = self.xs + self.ys + list(self.sample_weights or ())
        if background is None:
            background = rows * sum(a[:1].nbytes for a in sources) >= BACKGROUND_BYTES
        self.background = background
        slots = 2 if background else 1  # one slot: a batch is gathered after its last use
        self._x_stage = [[aligned_array((rows, *x.shape[1:]), x.dtype) for x in self.xs]
                         for _ in range(slots)]
        self._y_stage = [[np.empty((rows, *y.shape[1:]), np.float32) for y in self.ys]
                         for _ in range(slots)]
        self._w_stage = [[np.empty((rows, *w.shape[1:]), np.float32)
                          for w in self.sample_weights or ()] for _ in range(slots)]
        self._pool = self._pending = None
        if background and self.steps:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-feeder")
            self._pending = self._pool.submit(self._gather, 0)

    def _gather(self, step):
        """(xs, ys, sample weights) of batch `step` as lists of views of its staging slot: a
        full batch gets the staging arrays themselves, the same objects batch after batch (a
        plan already reading one need not be pointed at it again)."""
        index = self.order[step * self.batch_size:(step + 1) * self.batch_size]
        slot = step % len(self._x_stage)
        gathered = []
        for sources, stages in ((self.xs, self._x_stage[slot]), (self.ys, self._y_stage[slot]),
                                (self.sample_weights or (), self._w_stage[slot])):
            outs = [stage if len(stage) == len(index) else stage[:len(index)]
                    for stage in stages]
            for source, out in zip(sources, outs, strict=True):
                np.take(source, index, axis=0, out=out)
            gathered.append(outs)
        return gathered

    def batch_lists(self):
        """Yields (xs, ys, sample_weights) lists of views of the staged batch (ys is [] without
        labels, sample_weights None without weights). A yielded batch stays valid until the
        following one is requested (in the background, the next is gathered meanwhile)."""
        try:
            for step in range(self.steps):
                if self._pool is None:
                    xs, ys, weights = self._gather(step)
                else:
                    xs, ys, weights = self._pending.result()
                    if step + 1 < self.steps:
                        self._pending = self._pool.submit(self._gather, step + 1)
                yield xs, ys, (weights if self.sample_weights is not None else None)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)

    def batches(self):
        """Yields (x, y) as given: an array or a list for x, an array, a list or None for y."""
        for xs, ys, _ in self.batch_lists():
            y = ys if self.several_y else (ys[0] if ys else None)
            yield (xs if self.several else xs[0]), y
