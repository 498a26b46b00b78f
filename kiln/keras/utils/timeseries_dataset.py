"""keras.utils.timeseries_dataset_from_array: batches of sliding windows over an array.

Keras 3 returns a tf.data.Dataset; kiln has no TensorFlow, so the result is a PyDataset that
fit / evaluate / predict read the same way, yielding (windows, targets) batches as numpy
arrays in `data`'s and `targets`' dtypes (windows alone when `targets` is None). The window
start positions, their seeded shuffle and the batching are Keras's. What TensorFlow adds on
top with `shuffle=True`, a reshuffle each epoch through a buffer of `batch_size * 8` windows,
cannot be reproduced without it; here each epoch's order is a shuffle within blocks of that
many windows (block edges move every epoch), which like the buffer only moves a window a
little way from its place in Keras's shuffled order.
"""

import numbers

import numpy as np

from .py_dataset import PyDataset


class TimeseriesDataset(PyDataset):
    """Windows of `data` starting at `start_positions` (relative to `start_index`), batched;
    built by timeseries_dataset_from_array."""

    # fit's shuffle=True must not reorder these batches: Keras ignores it for a tf.data
    # dataset, which this stands in for (a chronological series stays chronological)
    keeps_batch_order = True

    def __init__(self, data, targets, start_positions, sequence_length, sampling_rate,
                 batch_size, shuffle, seed, start_index):
        super().__init__()
        self.data, self.targets = data, targets
        self.start_positions = start_positions
        self.offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.start_index = start_index
        self.epoch = 0
        self._set_order()

    def _set_order(self):
        """This epoch's window order: Keras's (shuffled) start positions, and with shuffle a
        local reshuffle standing in for TensorFlow's shuffle buffer."""
        self.order = self.start_positions
        count = len(self.order)
        if not self.shuffle or count < 2:
            return
        rng = np.random.default_rng([self.seed, self.epoch])
        block = self.batch_size * 8
        shift = int(rng.integers(block))  # moves the block edges from epoch to epoch
        keys = np.arange(count) + shift
        keys = keys // block * block + rng.random(count) * block  # sort inside each block
        self.order = self.start_positions[np.argsort(keys, kind="stable")]

    def __len__(self):
        return -(-len(self.start_positions) // self.batch_size)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches")
        positions = self.order[index * self.batch_size:(index + 1) * self.batch_size]
        positions = positions.astype(np.int64) + self.start_index
        windows = self.data[positions[:, None] + self.offsets]
        if self.targets is None:
            return windows
        return windows, self.targets[positions]

    def on_epoch_end(self):
        self.epoch += 1
        self._set_order()


def _count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"timeseries_dataset_from_array: argument {name} must be an int >= "
                         f"{minimum}, got {value!r}")
    return int(value)


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1,
                                  sampling_rate=1, batch_size=128, shuffle=False, seed=None,
                                  start_index=None, end_index=None):
    """A dataset of sliding windows over `data` (axis 0 is time), as Keras 3's.

    Args:
        data: Array of consecutive data points.
        targets: `targets[i]` is the target of the window starting at `data[i]`; None for
            windows alone.
        sequence_length: Time steps per window.
        sequence_stride: Steps between the starts of two windows.
        sampling_rate: Steps between two time steps of a window.
        batch_size: Windows per batch (the last may be smaller).
        shuffle: Shuffle the windows (with `seed`, as Keras; see the module docstring).
        seed: Seed of the shuffle; None draws one.
        start_index: Data points before it are not used.
        end_index: Data points from it on are not used.

    Returns:
        A `TimeseriesDataset` (a `PyDataset`) of `(windows, targets)` batches, or windows
        alone; windows are shaped `(batch, sequence_length) + data.shape[1:]`.

    Raises:
        ValueError: an argument out of range (as Keras), or `targets` too short for the
            windows' start positions.
    """
    where = "timeseries_dataset_from_array"
    data = np.asarray(data)
    if data.ndim == 0:
        raise ValueError(f"{where}: argument data must be an array with time on axis 0, got "
                         "a scalar")
    length = len(data)
    if start_index:
        if start_index < 0:
            raise ValueError(f"{where}: argument start_index must be 0 or greater, got "
                             f"{start_index}")
        if start_index >= length:
            raise ValueError(f"{where}: argument start_index must be lower than the length of "
                             f"data ({length}), got {start_index}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"{where}: argument end_index must be higher than start_index "
                             f"({start_index}), got {end_index}")
        if end_index >= length:
            raise ValueError(f"{where}: argument end_index must be lower than the length of "
                             f"data ({length}), got {end_index}")
        if end_index <= 0:
            raise ValueError(f"{where}: argument end_index must be higher than 0, got "
                             f"{end_index}")
    sequence_length = _count(sequence_length, "sequence_length", 1)
    sampling_rate = _count(sampling_rate, "sampling_rate", 1)
    sequence_stride = _count(sequence_stride, "sequence_stride", 1)
    if sampling_rate >= length:
        raise ValueError(f"{where}: argument sampling_rate must be lower than the length of "
                         f"data ({length}), got {sampling_rate}")
    if sequence_stride >= length:
        raise ValueError(f"{where}: argument sequence_stride must be lower than the length of "
                         f"data ({length}), got {sequence_stride}")
    if batch_size is None:
        raise ValueError(f"{where}: batch_size=None (single windows) is not supported: kiln "
                         "has no unbatched datasets; pass batch_size=1 for one window a batch")
    batch_size = _count(batch_size, "batch_size", 1)

    start_index = 0 if start_index is None else int(start_index)
    end_index = length if end_index is None else int(end_index)
    num_seqs = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets)
        num_seqs = min(num_seqs, len(targets))
    index_dtype = "int32" if num_seqs < 2147483647 else "int64"
    start_positions = np.arange(0, num_seqs, sequence_stride, dtype=index_dtype)
    if shuffle:
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(start_positions)
    if targets is not None and len(start_positions) and \
            start_index + int(start_positions.max()) >= min(end_index, len(targets)):
        raise ValueError(f"{where}: targets has {len(targets)} entries, too few for windows "
                         f"starting up to index {start_index + int(start_positions.max())} "
                         f"(start_index={start_index}, end_index={end_index})")
    return TimeseriesDataset(data, targets, start_positions, sequence_length, sampling_rate,
                             batch_size, bool(shuffle), 0 if seed is None else int(seed),
                             start_index)
