"""Runs examples/cifar10_resnet.py unchanged except for a few textual substitutions
(`epochs = 200` -> `epochs = 1`; for ResNet20 v2 `version = 1` -> `version = 2` and
`n = 3` -> `n = 2`; a recorder added to its callbacks), with `cifar10.load_data` returning real
CIFAR-10 images: the 846 test images shipped in
$KILN_DATASETS/cifar10-sample/cifar10_test_first846.npz (skipped without them), the first 460
as training data and the last 146 as test data. Like the full data set (50,000 and 10,000
images), neither count is a multiple of the batch of 32: the last batches are partial. (Fewer
than all 846 images, to keep the two runs under a minute while other jobs share the cores.)

One epoch of 15 steps shows what a few steps can: the training loss is finite and goes down
over the epoch, every kernel, gamma, beta and moving statistic moved, the printed summary has
the exact parameter count of the model (counted independently below; Keras 3 counts the same
for the same builders), and the predictions are (N, 10) probabilities. Accuracy is not
checked: after 15 steps the batch normalization moving statistics (momentum 0.99) are still
close to their initial values, so the inference-mode test accuracy is near chance, as in Keras.

With the example's augmentation, l2(1e-4) penalties (in the reported loss) and callbacks, seed
0: the median loss of the second half of the epoch is 0.15 below the mean of the first three
steps for v2 (0.22 before the initializers drew Keras-JAX's values), 1.04 for v1 (bound 0.1;
a model that does not learn stays within a few hundredths of its start; without augmentation
and penalties, seeds 0-4 gave 0.23-0.47 for v2 and 0.69-2.75 for v1). The two runs take about
10 s on two idle cores (steps of 80-125 ms), 40-55 s while other jobs load them.
"""

import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

from kiln.keras import backend, initializers
from kiln.keras import utils as keras_utils
from kiln.keras.callbacks import Callback
from kiln.keras.datasets import cifar10
from kiln.keras.models import load_model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cifar10_resnet.py"
BATCH = 32  # the example's batch_size
TRAIN_COUNT, TEST_COUNT = 460, 146
STEPS = -(-TRAIN_COUNT // BATCH)


def resnet_parameter_counts(version, n, num_classes=10):
    """(total, non-trainable) parameters of the example's resnet_v1 / resnet_v2 on 32x32x3
    inputs, counted layer by layer: a k x k Conv2D from c_in to c_out channels has
    k*k*c_in*c_out weights and c_out biases; a BatchNormalization over c channels has 2c
    trainable (gamma, beta) and 2c non-trainable (moving mean and variance) parameters."""
    total = frozen = 0

    def conv(k, c_in, c_out):
        nonlocal total
        total += k * k * c_in * c_out + c_out

    def batch_norm(c):
        nonlocal total, frozen
        total += 4 * c
        frozen += 2 * c

    conv(3, 3, 16)  # the first resnet_layer: conv-BN-relu
    batch_norm(16)
    channels = 16  # of x, the shortcut path
    if version == 1:
        for stack, filters in enumerate((16, 32, 64)):
            for block in range(n):
                conv(3, channels, filters)
                batch_norm(filters)
                conv(3, filters, filters)
                batch_norm(filters)
                if stack > 0 and block == 0:
                    conv(1, channels, filters)  # projection shortcut, no BN
                channels = filters
    else:
        filters_in = 16
        for stage in range(3):
            filters_out = filters_in * (4 if stage == 0 else 2)
            for block in range(n):
                if not (stage == 0 and block == 0):  # BN-relu-conv, but the very first
                    batch_norm(channels)
                conv(1, channels, filters_in)
                batch_norm(filters_in)
                conv(3, filters_in, filters_in)
                batch_norm(filters_in)
                conv(1, filters_in, filters_out)
                if block == 0:
                    conv(1, channels, filters_out)  # projection shortcut, no BN
                channels = filters_out
            filters_in = filters_out
        batch_norm(channels)  # BN-relu before the pooling
    total += channels * num_classes + num_classes  # the softmax Dense
    return total, frozen


# name: version, n, depth, (total, non-trainable parameters)
MODELS = {
    "resnet20_v1": (1, 3, 20, (274_442, 1_376)),
    "resnet20_v2": (2, 2, 20, (574_090, 3_488)),
}
# (version, n): (total, non-trainable) as Keras 3 counts them for the example's builders
KERAS_COUNTS = {(1, 3): (274_442, 1_376), (1, 5): (470_218, 2_272),
                (2, 2): (574_090, 3_488), (2, 3): (849_002, 5_216)}


def test_parameter_counts_are_those_of_the_keras_models():
    for (version, n), expected in KERAS_COUNTS.items():
        assert resnet_parameter_counts(version, n) == expected
    for version, n, _, expected in MODELS.values():
        assert KERAS_COUNTS[version, n] == expected
    # resnet_v1's docstring: "approx ... ResNet20 0.27M, ResNet32 0.46M, ResNet44 0.66M,
    # ResNet56 0.85M, ResNet110 1.7M"
    for n, millions in ((3, 0.27), (5, 0.46), (7, 0.66), (9, 0.85), (18, 1.7)):
        assert resnet_parameter_counts(1, n)[0] / 1e6 == pytest.approx(millions, rel=0.03)
    assert round(resnet_parameter_counts(1, 3)[0] / 1e6, 2) == 0.27


@pytest.fixture(scope="module")
def sample():
    try:
        x, y = cifar10.load_sample()
    except FileNotFoundError as err:
        pytest.skip(f"real CIFAR-10 images needed: {err}")
    assert len(x) >= TRAIN_COUNT + TEST_COUNT
    y = y.reshape(-1, 1)  # (N, 1) like cifar10.load_data
    return (x[:TRAIN_COUNT], y[:TRAIN_COUNT]), (x[-TEST_COUNT:], y[-TEST_COUNT:])


@pytest.fixture
def isolated_keras(tmp_path, monkeypatch):
    """No user keras.json (channels_last, as the example assumes); the working directory,
    where the example makes its saved_models/ folder, is a temporary one."""
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.chdir(tmp_path)
    backend._reset_for_tests()
    backend.clear_session()
    yield tmp_path
    backend._reset_for_tests()


class Recorder(Callback):
    """The weights before and after training, and each step's loss and duration."""

    def __init__(self):
        super().__init__()
        self.losses, self.seconds = [], []
        self.before = self.after = None
        self._start = None

    def on_train_begin(self, logs=None):
        self.before = {w.path: w.numpy().copy() for w in self.model.weights}

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)
        self.losses.append(logs["loss"])

    def on_train_end(self, logs=None):
        self.after = {w.path: w.numpy().copy() for w in self.model.weights}


def substitute(source, old, new):
    assert source.count(old) == 1, f"the example no longer has exactly one {old.strip()!r}"
    return source.replace(old, new)


def example_source(version, n):
    source = EXAMPLE.read_text()
    source = substitute(source, "epochs = 200\n", "epochs = 1\n")
    source = substitute(source, "n = 3\n", f"n = {n}\n")
    source = substitute(source, "version = 1\n", f"version = {version}\n")
    return substitute(source, "callbacks = [checkpoint, lr_reducer, lr_scheduler]\n",
                      "callbacks = [checkpoint, lr_reducer, lr_scheduler, recorder]\n")


def printed_number(out, label):
    match = re.search(rf"^{label}: (\S+)$", out, re.M)
    assert match, f"no '{label}:' line in the output"
    return float(match.group(1).replace(",", ""))


@pytest.mark.parametrize("name", list(MODELS))
def test_cifar10_resnet_example_runs_and_learns(name, sample, isolated_keras, monkeypatch,
                                                capsys):
    version, n, depth, (total, frozen) = MODELS[name]
    calls = []

    def load_data(*args, **kwargs):
        calls.append(args)
        (x_train, y_train), (x_test, y_test) = sample
        return (x_train.copy(), y_train.copy()), (x_test.copy(), y_test.copy())

    monkeypatch.setattr(cifar10, "load_data", load_data)
    initializers.set_random_seed(0)
    keras_utils.set_random_seed(0)  # shuffling and augmentation too: the same losses each run
    recorder = Recorder()
    namespace = {"__name__": "__main__", "__file__": str(EXAMPLE), "recorder": recorder}
    start = time.perf_counter()
    exec(compile(example_source(version, n), str(EXAMPLE), "exec"), namespace)
    seconds = time.perf_counter() - start
    out = capsys.readouterr().out
    model = namespace["model"]

    # what the script printed
    assert calls == [()]
    assert f"x_train shape: {(TRAIN_COUNT, 32, 32, 3)}" in out
    assert f"{TRAIN_COUNT} train samples" in out and f"{TEST_COUNT} test samples" in out
    assert f"y_train shape: {(TRAIN_COUNT, 1)}" in out
    lines = out.splitlines()
    assert f"ResNet{depth}v{version}" in lines
    assert "Learning rate:  0.001" in lines and "Using real-time data augmentation." in lines
    assert printed_number(out, "Total params") == total
    assert printed_number(out, "Trainable params") == total - frozen
    assert printed_number(out, "Non-trainable params") == frozen
    assert model.count_params() == total
    assert lines.count("Epoch 1/1") == 1 and not any(line.startswith("Epoch 2/") for line in lines)
    # the progress line of the epoch (the callbacks print around it)
    epoch_lines = [line for line in lines[lines.index("Epoch 1/1") + 1:]
                   if line.startswith(f"{STEPS}/{STEPS} - ")]
    assert len(epoch_lines) == 1 and " - val_accuracy: " in epoch_lines[0], lines
    assert math.isfinite(printed_number(out, "Test loss"))
    assert 0.0 <= printed_number(out, "Test accuracy") <= 1.0
    # ModelCheckpoint (monitor 'val_acc', Keras 2's name of the logged val_accuracy) saved
    # the first epoch's model as a Keras 2 .h5 file, which loads back with equal predictions
    saved = sorted(p.name for p in (isolated_keras / "saved_models").iterdir())
    assert saved == [f"cifar10_ResNet{depth}v{version}_model.001.h5"], saved
    assert "saving model to" in out
    loaded = load_model(isolated_keras / "saved_models" / saved[0])
    np.testing.assert_allclose(loaded.predict(namespace["x_test"][:32]),
                               model.predict(namespace["x_test"][:32]), rtol=1e-5, atol=1e-6)

    # training: finite losses that go down over the epoch, and every parameter moved
    losses = np.array(recorder.losses)
    assert len(losses) == STEPS and np.isfinite(losses).all(), losses
    first, later = losses[:3].mean(), np.median(losses[STEPS // 2:])
    assert later < first - 0.1, f"{name}: losses {np.round(losses, 3).tolist()}"
    moved = [path for path in recorder.before
             if not np.array_equal(recorder.before[path], recorder.after[path])]
    # a conv bias before a batch norm has no gradient in exact arithmetic (Adam moves it on
    # rounding noise alone): not required; every other weight and statistic must move
    expected = [path for path in recorder.before
                if not (path.startswith("conv2d") and path.endswith("/bias"))]
    assert set(expected) <= set(moved), sorted(set(expected) - set(moved))
    assert any(path.endswith("/moving_variance") for path in moved)

    # predictions: one probability vector per test image
    probabilities = model.predict(namespace["x_test"])
    assert probabilities.shape == (TEST_COUNT, 10)
    assert np.isfinite(probabilities).all() and (probabilities >= 0).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)

    step_ms = 1000 * np.median(recorder.seconds[1:])
    print(f"{name}: {seconds:.1f} s for the script, median step {step_ms:.0f} ms "
          f"(first step, with planning, {1000 * recorder.seconds[0]:.0f} ms), losses "
          f"{np.round(losses, 3).tolist()}")
