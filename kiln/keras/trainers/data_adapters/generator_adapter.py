"""Python generators (and other iterators): pulled by one background thread, in order.

A generator is not safe to advance from two threads, so exactly one worker pulls from it and
checks and stages each batch while the loop trains on the previous one; at most
`max_queue_size` batches are pulled ahead, and never past the end of the current epoch, so no
batch is drawn and then dropped. The generator lives across epochs as in Keras: with
`steps_per_epoch` every epoch takes that many batches; without it the first epoch runs until
the generator stops. An epoch that gets fewer than steps_per_epoch batches, or none, marks the
adapter exhausted (fit then stops, as Keras does when its input runs out of data).
"""

import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from .array_adapter import positive_int
from .data_adapter import DataAdapter
from .staged_batches import BatchStandardizer, StagingRing

_END = object()


class GeneratorDataAdapter(DataAdapter):
    def __init__(self, generator, steps_per_epoch=None, class_weight=None, signature=None,
                 max_queue_size=10):
        owner = signature.owner
        self.iterator = iter(generator)
        self.steps = None if steps_per_epoch is None else positive_int(
            steps_per_epoch, "steps_per_epoch", owner)
        self.queue_size = positive_int(max_queue_size, "max_queue_size", owner)
        self.ring = StagingRing(self.queue_size + 2)
        self.standardize = BatchStandardizer(signature, self.ring, "generator", class_weight)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-generator")
        self.epoch = 0
        self.pulled = 0  # batches drawn so far, over all epochs: picks the staging slot

    def _pull(self, step, slot):
        """Next batch from the generator, checked and staged (runs in the worker thread)."""
        try:
            batch = next(self.iterator)
        except StopIteration:
            return _END
        where = self.standardize.where(self.epoch, step, self.steps)
        return self.standardize(batch, slot, where)

    def _submit(self, pending, step):
        pending.append(self.pool.submit(self._pull, step, self.pulled % len(self.ring.slots)))
        self.pulled += 1

    def batches(self):
        if self.exhausted:
            return
        pending = deque()
        limit = self.steps
        for step in range(min(self.queue_size, limit or self.queue_size)):
            self._submit(pending, step)
        step = 0
        while pending:
            batch = pending.popleft().result()
            if batch is _END:
                # without steps_per_epoch the end of the generator is the end of the epoch;
                # an epoch that gets nothing, or fewer than steps_per_epoch, ran out of data
                if self.steps is not None or step == 0:
                    self.exhausted = True
                    warnings.warn(f"{self.standardize.signature.owner}: the generator ran out "
                                  f"of data after {step} batches in epoch {self.epoch + 1}; "
                                  "training stops. Make it yield at least steps_per_epoch * "
                                  "epochs batches.", stacklevel=2)
                pending.clear()  # later pulls of a finished generator also end
                break
            ahead = step + len(pending) + 1
            if limit is None or ahead < limit:
                self._submit(pending, ahead)
            step += 1
            yield batch

    def on_epoch_end(self):
        self.epoch += 1

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)
