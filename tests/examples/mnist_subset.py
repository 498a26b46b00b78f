"""What the example-script tests on real MNIST share: whether $KILN_DATASETS has it, writing a
subset of it as the Keras cache's mnist.npz for a script to load, and the check that a
script's training losses fell. The `real_mnist` fixture is in conftest.py."""

import math
import os
from pathlib import Path

import numpy as np
import pytest

DATASETS = os.environ.get("KILN_DATASETS")
HAS_MNIST = bool(DATASETS) and (Path(DATASETS) / "mnist").is_dir()
needs_mnist = pytest.mark.skipif(not HAS_MNIST, reason="needs $KILN_DATASETS/mnist")


def write_mnist(cache, real_mnist, train, test):
    """The first `train` training and `test` test digits as cache/mnist.npz."""
    (x_train, y_train), (x_test, y_test) = real_mnist
    np.savez(cache / "mnist.npz", x_train=x_train[:train], y_train=y_train[:train],
             x_test=x_test[:test], y_test=y_test[:test])


def losses_fall(logs):
    """Every epoch's loss is finite and the last is below the first."""
    losses = [log["loss"] for log in logs]
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < losses[0], losses
