"""SyncBatchNormalization: BatchNormalization with `synchronized=True`, under the name
tf.keras gave it (`tf.keras.layers.experimental.SyncBatchNormalization`).

In a data-parallel fit its batch statistics are those of the global batch, all ranks'
shards together (kiln/ops/sync_batch_norm.py); in one process it is BatchNormalization.
"""

from .batch_normalization import BatchNormalization


class SyncBatchNormalization(BatchNormalization):
    """Args: as BatchNormalization (synchronized is always True)."""

    def __init__(self, axis=-1, **kwargs):
        if kwargs.pop("synchronized", True) is not True:
            raise ValueError("SyncBatchNormalization: argument synchronized must be True (use "
                             "BatchNormalization for per-rank statistics)")
        super().__init__(axis, synchronized=True, **kwargs)
