"""How the passes over a data source become epochs: Keras 3's EpochIterator, step for step.

A pass is one run through the source (every batch of arrays or of a PyDataset, a generator
until it stops). With `steps_per_epoch` an epoch takes the next `steps_per_epoch` batches of
the current pass and the pass is kept across epochs: an epoch continues where the last one
stopped, and a new pass (reshuffled) starts only once the last one is used up. Without it
every epoch is a new pass. When a pass runs out within an epoch, that epoch is cut short with
Keras's warning and training goes on (Keras does not stop): a source of known length ends the
epoch at its last batch; a generator that stops drops its pass, so the next epoch starts a new
one (which, for a generator, replays only the batches Keras peeked at: generator_adapter.py).
An epoch can so get fewer batches than `steps_per_epoch`, or none.

The adapter supplies `_new_pass()` (an object with `take(count)`, yielding at most `count`
more batches and never fetching past them, `ended` once the source stopped, and `close()`),
`num_batches` (batches in a pass, None when unknown) and, for a PyDataset, the source's
`on_epoch_begin` / `on_epoch_end` through `_source_epoch_begin` / `_source_epoch_end`.
"""

import warnings

_UNSET = object()
RAN_OUT = ("Your input ran out of data; interrupting training. Make sure that your dataset or "
           "generator can generate at least `steps_per_epoch * epochs` batches. You may need "
           "to use the `.repeat()` function when building your dataset.")


class Epochs:
    #: the user's steps_per_epoch (None: an epoch is a pass)
    steps_per_epoch = None
    #: batches in one pass, None when only running out tells (a generator)
    num_batches = None
    _pass = None
    _seen = 0  # batches asked of the current pass, including one that found it ended
    _known = _UNSET  # num_batches, or learned from where a generator first ran out

    @property
    def steps(self):
        """Batches an epoch is meant to have, as callbacks and the progress bar are told."""
        return self.steps_per_epoch or self.num_batches

    def reset(self):
        """At the start of fit and of every evaluate (validation too), as Keras: drop the pass,
        forget a learned length, and tell the source its epoch ended."""
        self._drop_pass()
        self._seen, self._known = 0, self.num_batches
        self._source_epoch_end()

    def probe(self):
        """What Keras does when fit / evaluate first runs after compile: it builds the losses
        and metrics on one batch of a fresh pass (fetched, then dropped by the reset that
        follows). Run for its side effects on the source: a PyDataset's on_epoch_begin and
        first item, the shuffle drawn for that pass."""
        self._source_epoch_begin()
        probe = self._new_pass()
        try:
            for _ in probe.take(1):
                pass
        finally:
            probe.close()

    def batches(self):
        """The batches of one epoch, as (xs, ys or None, sample_weights or None) lists."""
        if self._known is _UNSET:  # predict: Keras iterates without a reset first
            self._known = self.num_batches
        self._source_epoch_begin()
        steps = self.steps_per_epoch or self._known
        if not steps:  # length unknown: the epoch is a pass, to its end
            self._drop_pass()
            self._pass = self._new_pass()
            self._seen = 0
            for batch in self._pass.take(None):
                self._seen += 1
                yield batch
            self._seen += 1  # the pull that found the end
            self._ran_out()
            return
        if self._pass is None or self.steps_per_epoch is None:
            self._drop_pass()
            self._pass, self._seen = self._new_pass(), 0
        wanted = steps if not self._known else max(0, min(steps, self._known - self._seen))
        for batch in self._pass.take(wanted):
            self._seen += 1
            yield batch
        if self._pass.ended:
            self._seen += 1
            self._ran_out()
            return
        if wanted < steps and self.steps_per_epoch:
            warnings.warn(RAN_OUT, UserWarning, stacklevel=2)
        if self._known and self._seen >= self._known:
            self._drop_pass()
            self._pass, self._seen = self._new_pass(), 0
        self._source_epoch_end()

    def _ran_out(self):
        if self._known is None:
            self._known = self._seen
        warnings.warn(RAN_OUT, UserWarning, stacklevel=3)
        self._drop_pass()
        self._source_epoch_end()

    def _drop_pass(self):
        if self._pass is not None:
            self._pass.close()
            self._pass = None

    def _new_pass(self):
        raise NotImplementedError

    def _source_epoch_begin(self):
        """A PyDataset's on_epoch_begin (at the start of every epoch)."""

    def _source_epoch_end(self):
        """A PyDataset's on_epoch_end (after every epoch, and at each reset)."""
