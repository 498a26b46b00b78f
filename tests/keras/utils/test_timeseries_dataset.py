"""keras.utils.timeseries_dataset_from_array: the batches Keras 3 makes, and fit on them.

Keras's result is a tf.data.Dataset and TensorFlow is not installed, so the expected batches
are computed here from Keras's source, one window at a time with plain Python indexing: the
start positions `np.arange(0, num_seqs, sequence_stride)` (shuffled with
`np.random.RandomState(seed)`), window `i` = `data[start_index + p + k * sampling_rate]` for
`k < sequence_length`, its target `targets[start_index + p]`. Keras's argument checks run
before it needs TensorFlow, so its errors are compared directly.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
keras_utils = pytest.importorskip("keras.utils")

from kiln import keras  # noqa: E402
from kiln.keras.layers import Conv1D, Dense, Flatten  # noqa: E402
from kiln.keras.utils import PyDataset, timeseries_dataset_from_array  # noqa: E402


def keras_batches(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None):
    """What Keras's dataset yields (shuffle=True: before TensorFlow's buffer shuffle)."""
    start = start_index or 0
    end = len(data) if end_index is None else end_index
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if targets is not None:
        num_seqs = min(num_seqs, len(targets))
    positions = list(range(0, max(num_seqs, 0), sequence_stride))
    if shuffle:
        positions = np.array(positions, dtype="int32")
        np.random.RandomState(seed).shuffle(positions)
        positions = positions.tolist()
    windows = [[data[start + p + k * sampling_rate] for k in range(sequence_length)]
               for p in positions]
    batches = []
    for first in range(0, len(positions), batch_size):
        x = np.array(windows[first:first + batch_size], dtype=np.asarray(data).dtype)
        if targets is None:
            batches.append(x)
        else:
            y = np.array([targets[start + p] for p in positions[first:first + batch_size]],
                         dtype=np.asarray(targets).dtype)
            batches.append((x, y))
    return batches


def assert_same_batches(dataset, expected):
    got = list(dataset)
    assert len(dataset) == len(got) == len(expected)
    for got_batch, want in zip(got, expected, strict=True):
        pairs = zip(got_batch, want, strict=True) if isinstance(want, tuple) else [
            (got_batch, want)]
        for a, b in pairs:
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)


DATA = np.arange(100) * 10
TARGETS = np.arange(100) * -1
CASES = [
    dict(sequence_length=10),
    dict(sequence_length=10, sampling_rate=2, sequence_stride=3, batch_size=7),
    dict(sequence_length=1, batch_size=1),
    dict(sequence_length=5, batch_size=16, start_index=12, end_index=80),
    dict(sequence_length=4, sampling_rate=3, batch_size=9, start_index=30),
    dict(sequence_length=4, sequence_stride=5, end_index=41, batch_size=3),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("with_targets", [True, False], ids=["targets", "no-targets"])
def test_batches_are_keras_windows(case, with_targets):
    targets = TARGETS if with_targets else None
    assert_same_batches(timeseries_dataset_from_array(DATA, targets, **case),
                        keras_batches(DATA, targets, **case))


def test_multidimensional_float_data_and_shorter_targets():
    data = np.random.default_rng(0).standard_normal((60, 3, 2))
    targets = np.arange(40, dtype=np.float32).reshape(20, 2)
    kwargs = dict(sequence_length=6, sampling_rate=2, batch_size=8)
    dataset = timeseries_dataset_from_array(data, targets, **kwargs)
    assert dataset[0][0].shape == (8, 6, 3, 2) and dataset[0][0].dtype == np.float64
    assert dataset[0][1].shape == (8, 2) and dataset[0][1].dtype == np.float32
    assert_same_batches(dataset, keras_batches(data, targets, **kwargs))


def test_keras_docstring_examples():
    indices = np.arange(99)
    dataset = timeseries_dataset_from_array(indices, None, sequence_length=10,
                                            sampling_rate=2, sequence_stride=3)
    x = dataset[0]
    assert x[0].tolist() == list(range(0, 19, 2)) and x[1].tolist() == list(range(3, 22, 2))
    assert x[2].tolist() == list(range(6, 25, 2)) and x[-1].tolist() == list(range(78, 97, 2))

    data = np.random.default_rng(1).standard_normal(50)
    inputs, targets = timeseries_dataset_from_array(data[:-10], data[10:], sequence_length=10)[0]
    np.testing.assert_array_equal(inputs[0], data[:10])
    assert targets[0] == data[10]

    x_values, y_values = np.arange(100), np.arange(100) * 2
    inputs = timeseries_dataset_from_array(x_values, None, sequence_length=20,
                                           sequence_stride=20)
    outputs = timeseries_dataset_from_array(y_values, None, sequence_length=20,
                                            sequence_stride=20)
    first_inputs, first_outputs = next(zip(inputs, outputs, strict=True))
    np.testing.assert_array_equal(first_inputs[0], x_values[:20])
    np.testing.assert_array_equal(first_outputs[1], y_values[20:40])


def test_too_short_data_gives_no_batch():
    dataset = timeseries_dataset_from_array(np.arange(10), None, sequence_length=20)
    assert len(dataset) == 0 and list(dataset) == []


def test_shuffle_is_keras_order_reshuffled_locally_each_epoch():
    kwargs = dict(sequence_length=3, batch_size=2, shuffle=True, seed=11)
    dataset = timeseries_dataset_from_array(DATA, TARGETS, **kwargs)
    keras_order = [int(t) for _, y in keras_batches(DATA, TARGETS, **kwargs) for t in -y]
    block = 2 * 8  # TensorFlow's shuffle buffer: batch_size * 8
    orders = []
    for _ in range(3):
        order = [int(t) for _, y in dataset for t in -y]
        assert sorted(order) == sorted(keras_order)
        moved = [abs(order.index(p) - keras_order.index(p)) for p in order]
        assert max(moved) < block
        orders.append(order)
        dataset.on_epoch_end()
    assert orders[0] != orders[1] != orders[2] and orders[0] != keras_order
    again = timeseries_dataset_from_array(DATA, TARGETS, **kwargs)
    assert [int(t) for _, y in again for t in -y] == orders[0]  # the seed fixes it
    for x, y in again:  # windows still match their targets
        np.testing.assert_array_equal(x[:, 0], -y * 10)


@pytest.mark.parametrize("kwargs", [
    dict(start_index=-1), dict(start_index=100), dict(start_index=10, end_index=10),
    dict(end_index=100), dict(end_index=-3), dict(sampling_rate=0), dict(sampling_rate=100),
    dict(sequence_stride=0), dict(sequence_stride=100),
], ids=str)
def test_argument_errors_like_keras(kwargs):
    with pytest.raises(ValueError, match="argument"):
        timeseries_dataset_from_array(DATA, TARGETS, 5, **kwargs)
    with pytest.raises(ValueError):
        keras_utils.timeseries_dataset_from_array(DATA, TARGETS, 5, **kwargs)


@pytest.mark.parametrize("kwargs,message", [
    (dict(batch_size=None), "batch_size=None"),
    (dict(batch_size=0), "batch_size must be an int >= 1"),
    (dict(sequence_length=0), "sequence_length must be an int >= 1"),
])
def test_kiln_only_errors(kwargs, message):
    kwargs = {"sequence_length": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        timeseries_dataset_from_array(DATA, TARGETS, **kwargs)


def test_targets_too_short_for_start_index():
    """Keras's tf.gather would fail mid-epoch; kiln says so up front."""
    with pytest.raises(ValueError, match="targets has 30 entries"):
        timeseries_dataset_from_array(DATA, TARGETS[:30], 5, start_index=20)


def windowed_model():
    keras.utils.set_random_seed(3)
    net = keras.Sequential([Conv1D(4, 3, activation="relu", input_shape=(6, 2)), Flatten(),
                            Dense(1)])
    net.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return net


@pytest.mark.usefixtures("kiln_keras_env")
def test_fit_evaluate_predict_train_as_the_same_windows_as_arrays():
    rng = np.random.default_rng(2)
    series = rng.standard_normal((90, 2)).astype(np.float32)
    targets = series[6:, :1] + series[6:, 1:]
    kwargs = dict(sequence_length=6, sequence_stride=2, batch_size=10)
    dataset = timeseries_dataset_from_array(series[:-6], targets, **kwargs)
    assert isinstance(dataset, PyDataset)
    batches = keras_batches(series[:-6], targets, **kwargs)
    x = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])

    reference = windowed_model()
    reference_history = reference.fit(x, y, batch_size=10, epochs=3, shuffle=False, verbose=0)
    trained = windowed_model()
    history = trained.fit(dataset, epochs=3, verbose=0)  # fit's shuffle=True keeps the order
    for a, b in zip(trained.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert history.history["loss"] == reference_history.history["loss"]
    assert history.history["loss"][-1] < history.history["loss"][0]
    np.testing.assert_allclose(trained.evaluate(dataset, verbose=0),
                               reference.evaluate(x, y, batch_size=10, verbose=0), rtol=1e-6)
    windows_only = timeseries_dataset_from_array(series[:-6], None, **kwargs)
    np.testing.assert_array_equal(trained.predict(windows_only, verbose=0),
                                  reference.predict(x, batch_size=10, verbose=0))
