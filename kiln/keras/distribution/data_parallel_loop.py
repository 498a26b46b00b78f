"""What fit / evaluate / predict do differently under a data-parallel distribution.

Every rank runs the same script, so every rank sees the same global batches (an array
dataset's shuffled order is rank 0's, broadcast at each pass over it). Then:
- at the start of fit / evaluate / predict the ranks check that they run the same job (kiln
  version, model, batch size, step and sample counts) and rank 0's weights are broadcast;
- each rank runs its shard of every global batch (`batch_size` stays the global batch): rank r
  takes rows [start_r, stop_r) of a batch split as evenly as np.array_split splits it;
- the plan sums the gradients across ranks before each update, each rank's weighted by its
  shard / global batch, so the update is that of the mean over the global batch;
- the logged losses and metrics are averages over all ranks (weighted by their samples);
- the progress bar, CSVLogger and every file write of model.save / save_weights (so
  ModelCheckpoint) happen on rank 0 only; predict gathers every rank's rows on every rank.
BatchNormalization's batch statistics stay per rank (each normalizes its own shard); its
moving statistics are averaged across ranks when fit ends, so all replicas end equal.
SyncBatchNormalization (BatchNormalization(synchronized=True)) normalizes with the global
batch's statistics instead.
"""

import hashlib

import numpy as np

from ... import __version__
from ...distributed.collective import GradientBuckets
from ...ops.sync_batch_norm import SyncBatchNormOp
from ...runtime.feeder import aligned_array
from ..trainers.data_adapters import ArrayDataAdapter, DataAdapter
from .distribution_lib import distribution


def active_world():
    """The World when a data-parallel distribution spans several ranks, else None."""
    value = distribution()
    return value.world if value is not None and value.is_distributed else None


def is_writer():
    """Whether this process writes files (rank 0, or the only process)."""
    world = active_world()
    return world is None or world.rank == 0


def shard_counts(total, size):
    """Rows each rank takes of a global batch of `total` (as np.array_split)."""
    base, extra = divmod(total, size)
    return [base + (1 if rank < extra else 0) for rank in range(size)]


class ShardedAdapter(DataAdapter):
    """One rank's view of another adapter: its rows of every global batch.

    Args:
        inner: the adapter of the whole data (every rank makes the same one).
        world: the World.
        owner: 'fit', 'evaluate' or 'predict', for messages.
        reducer: the GradientBuckets whose weight follows each batch's shard (fit only).
    """

    def __init__(self, inner, world, owner, reducer=None):
        self.inner, self.world, self.owner, self.reducer = inner, world, owner, reducer
        self.batch_size = getattr(inner, "batch_size", None)
        self.counts = []  # rows per rank of each batch so far (predict puts rows back with it)
        self._staging = {}
        if isinstance(inner, ArrayDataAdapter):
            own_order = inner.epoch_order

            def rank_zero_order():
                order = np.ascontiguousarray(own_order(), dtype=np.int64)
                return world.broadcast(order)
            inner.epoch_order = rank_zero_order

    @property
    def steps(self):
        return self.inner.steps

    def reset(self):
        self.inner.reset()

    def probe(self):
        self.inner.probe()

    def batches(self):
        world = self.world
        for xs, ys, weights in self.inner.batches():
            total = len(xs[0])
            if total < world.size:
                raise ValueError(f"{self.owner}: a batch of {total} samples cannot be split "
                                 f"among {world.size} data-parallel ranks; use a batch_size "
                                 f"(and a number of samples) of at least {world.size} per "
                                 "batch")
            counts = shard_counts(total, world.size)
            start = sum(counts[:world.rank])
            rows = slice(start, start + counts[world.rank])
            self.counts.append(counts)
            if self.reducer is not None:
                self.reducer.weight = counts[world.rank] / total
            yield ([self._aligned(position, x[rows]) for position, x in enumerate(xs)],
                   None if ys is None else [y[rows] for y in ys],
                   None if weights is None else [w[rows] for w in weights])

    def _aligned(self, position, part):
        """A plan points its input at the rows: they must start on a 64-byte boundary."""
        if part.ctypes.data % 64 == 0:
            return part
        key = (position, part.shape)
        if key not in self._staging:
            self._staging[key] = aligned_array(part.shape)
        staging = self._staging[key]
        staging[...] = part
        return staging

    def close(self):
        self.inner.close()


def _fingerprint(text):
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:7], "little")


def check_same_job(world, model, owner, adapter):
    """Raise on every rank (instead of deadlocking later) when the ranks differ in what
    decides the collectives they will call."""
    fields = {
        "kiln version": _fingerprint(__version__),
        "model (weights, shapes, layers)": _fingerprint(repr(
            [(w.path, w.shape) for w in model.weights]
            + [type(layer).__name__ for layer in model.layers])),
        "batch size": int(getattr(adapter, "batch_size", None) or -1),
        "steps per epoch": int(adapter.steps if adapter.steps is not None else -1),
        "samples": int(getattr(adapter, "count", -1)),
    }
    table = world.all_gather(np.array(list(fields.values()), dtype=np.int64))
    problems = []
    for column, name in enumerate(fields):
        values = table[:, column]
        if (values != values[0]).any():
            ranks = [rank for rank in range(world.size) if values[rank] != values[0]]
            shown = ("" if name in ("kiln version", "model (weights, shapes, layers)")
                     else f" ({', '.join(f'rank {r}: {v}' for r, v in enumerate(values))})")
            problems.append(f"{name}: rank(s) {ranks} differ from rank 0{shown}")
    if problems:
        raise RuntimeError(f"{owner}: the data-parallel ranks do not run the same job; "
                           + "; ".join(problems) + ". Every rank must run the same script "
                           "with the same kiln version and arguments")


def broadcast_weights(world, model):
    """Every rank takes rank 0's weights (one Bcast of all of them)."""
    values = model.get_weights()
    if not values:
        return
    flat = np.concatenate([np.ravel(v).astype(np.float32) for v in values])
    world.broadcast(flat)
    restored, start = [], 0
    for value in values:
        restored.append(flat[start:start + value.size].reshape(value.shape).astype(value.dtype))
        start += value.size
    model.set_weights(restored)


def average_moving_statistics(world, model):
    """BatchNormalization's moving mean / variance, averaged over the ranks."""
    weights = [w for w in model.weights
               if not w.trainable and w.name in ("moving_mean", "moving_variance")]
    if not weights:
        return
    flat = np.concatenate([np.ravel(w.numpy()).astype(np.float64) for w in weights])
    world.sum_in_place(flat)
    flat /= world.size
    start = 0
    for weight in weights:
        size = int(np.prod(weight.shape))
        weight.assign(flat[start:start + size].reshape(weight.shape).astype(np.float32))
        start += size


def synchronize_batch_norm(world, model):
    """Give every synchronized BatchNormalization op the world to sum its statistics over
    (training plans made before, without it, are dropped)."""
    changed = False
    for node in model.graph.nodes:
        if isinstance(node.op, SyncBatchNormOp) and node.op.sync is not world:
            node.op.sync = world
            changed = True
    if changed:
        model._plans = {key: plan for key, plan in model._plans.items() if key[0] is not True}


def global_logs(world, logs, samples):
    """Each rank's running means, averaged over the ranks weighted by their `samples`."""
    names = list(logs)
    totals = np.array([float(logs[name]) * samples for name in names] + [samples],
                      dtype=np.float64)
    world.sum_in_place(totals)
    count = totals[-1] or 1.0
    return {name: float(totals[i] / count) for i, name in enumerate(names)}


def rank_callbacks(callback_list):
    """Rank 0 keeps every callback; the others drop those that only write (progress bar,
    CSV log). ModelCheckpoint stays: model.save on those ranks writes nothing."""
    if is_writer():
        return
    from ..callbacks import CSVLogger, ProgbarLogger

    callback_list.callbacks = [c for c in callback_list.callbacks
                               if not isinstance(c, (ProgbarLogger, CSVLogger))]


def start(model, owner, adapter, reducer=False):
    """Check, synchronize and shard for one fit / evaluate / predict; returns the sharded
    adapter (the adapter itself in one process)."""
    world = active_world()
    if world is None:
        return adapter
    check_same_job(world, model, owner, adapter)
    broadcast_weights(world, model)
    if not reducer:  # evaluate / predict (perhaps from a callback, inside a fit)
        return ShardedAdapter(adapter, world, owner)
    synchronize_batch_norm(world, model)
    model._gradient_reducer = GradientBuckets(world, model.store)
    return ShardedAdapter(adapter, world, owner, model._gradient_reducer)


def finish_fit(model):
    """After the last epoch (not on an error: another rank may never join a collective)."""
    world = active_world()
    if world is not None:
        average_moving_statistics(world, model)


def gather_predictions(adapter, outputs):
    """Every rank's predicted rows, in the order of the global batches, on every rank."""
    if not isinstance(adapter, ShardedAdapter):
        return outputs
    world = adapter.world
    per_rank = [sum(counts[rank] for counts in adapter.counts) for rank in range(world.size)]
    # rank r's rows of batch b sit at [sum of r's earlier batches, ...) in its local output
    order, offsets = [], np.concatenate([[0], np.cumsum(per_rank)[:-1]])
    seen = [0] * world.size
    for counts in adapter.counts:
        for rank, count in enumerate(counts):
            first = offsets[rank] + seen[rank]
            order.append(np.arange(first, first + count))
            seen[rank] += count
    order = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    return [world.gather_rows(np.ascontiguousarray(output), per_rank)[order]
            for output in outputs]


def shard(adapter, owner):
    """The rank's view of a further adapter of the same run (fit's validation data)."""
    world = active_world()
    if world is None or adapter is None:
        return adapter
    return ShardedAdapter(adapter, world, owner)


def logs(runner):
    """The runner's logs, averaged over the ranks when data-parallel."""
    world = active_world()
    own = runner.logs()
    if world is None:
        return own
    return global_logs(world, own, float(runner.trackers.state[0, 1]))
