"""Python generators (and other iterators): pulled by one background thread, in order.

A generator is not safe to advance from two threads, so exactly one worker pulls from it and
checks and stages each batch while the loop trains on the previous one; at most
`max_queue_size` batches are pulled ahead, and never past the end of the current epoch, so no
batch is drawn and then dropped. The generator is never restarted (it cannot be), as in
Keras 3, whose adapter peeks at its first two batches when it starts and puts them in front
of the generator each time it begins a pass: so after the generator ran out, every new pass
(the next epoch, each validation run) replays those two batches and then finds the generator
empty. epochs.py says when a pass begins and what running out does (a warning, not a stop).
"""

import itertools
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from .array_adapter import positive_int
from .data_adapter import DataAdapter
from .staged_batches import BatchStandardizer, StagingRing

_END = object()
PEEKED = 2  # Keras's NUM_BATCHES_FOR_TENSOR_SPEC: the batches its adapter peeks at


class GeneratorDataAdapter(DataAdapter):
    def __init__(self, generator, steps_per_epoch=None, class_weight=None, signature=None,
                 max_queue_size=10):
        owner = signature.owner
        self.source = generator
        self.iterator = self.peeked = None
        if steps_per_epoch is not None:
            self.steps_per_epoch = positive_int(steps_per_epoch, "steps_per_epoch", owner)
        self.queue_size = positive_int(max_queue_size, "max_queue_size", owner)
        self.ring = StagingRing(self.queue_size + 2)
        self.standardize = BatchStandardizer(signature, self.ring, "generator", class_weight)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kiln-generator")
        self.epoch = -1  # counts batches() calls, for error messages
        self.pulled = 0  # batches drawn so far, over all passes: picks the staging slot

    def _peek(self):
        """The first batches, pulled once, when fit / evaluate starts (Keras: when its epoch
        iterator is made, which for validation data is at the first validation)."""
        if self.peeked is None:
            self.iterator = iter(self.source)
            self.peeked = list(itertools.islice(self.iterator, PEEKED))
            if not self.peeked:
                raise ValueError(f"{self.standardize.signature.owner}: argument x is a "
                                 "generator that yielded no batch; it must yield at least one")

    def reset(self):
        self._peek()
        super().reset()

    def batches(self):
        self.epoch += 1
        return super().batches()

    def _new_pass(self):
        self._peek()
        return _GeneratorPass(self, itertools.chain(self.peeked, self.iterator))

    def close(self):
        super().close()
        self.pool.shutdown(wait=True, cancel_futures=True)


class _GeneratorPass:
    """The peeked batches, then the generator from wherever it is."""

    def __init__(self, adapter, iterator):
        self.adapter, self.iterator = adapter, iterator
        self.ended = False

    def _pull(self, step, slot):
        """Next batch of the pass, checked and staged (runs in the worker thread)."""
        try:
            batch = next(self.iterator)
        except StopIteration:
            return _END
        adapter = self.adapter
        where = adapter.standardize.where(adapter.epoch, step, adapter.steps)
        return adapter.standardize(batch, slot, where)

    def take(self, count):
        """At most `count` batches (None: until the end), pulled ahead up to the queue size."""
        adapter = self.adapter
        pending = deque()
        submitted = 0

        def submit():
            nonlocal submitted
            slot = adapter.pulled % len(adapter.ring.slots)
            pending.append(adapter.pool.submit(self._pull, submitted, slot))
            adapter.pulled += 1
            submitted += 1

        for _ in range(adapter.queue_size if count is None else min(adapter.queue_size,
                                                                     count)):
            submit()
        while pending:
            batch = pending.popleft().result()
            if batch is _END:
                self.ended = True  # later pulls of the finished pass also end
                return
            if count is None or submitted < count:
                submit()
            yield batch

    def close(self):
        self.ended = True
