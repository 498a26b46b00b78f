"""Keras 2.2.4's mnist_irnn.py and mnist_net2net.py run in kiln with only their imports changed
(from Keras 2.2.4's source distribution on PyPI), on a subset of the real MNIST written as the
Keras cache's mnist.npz (needs $KILN_DATASETS/mnist/).

mnist_irnn.py: SimpleRNN(100, relu, kernel RandomNormal(stddev=0.001), recurrent
Identity(gain=1.0)) over the 784 pixels as a sequence, RMSprop(lr=1e-6). Its predictions are
compared with Keras 3's SimpleRNN given the same weights.
mnist_net2net.py: weight surgery with get_weights / set_weights (and Keras 2's `weights=`
argument) on Conv2D and Dense. What the paper's methods promise is checked on the models the
script builds, just before each one trains: net2deeper keeps the teacher's function exactly,
net2wider up to the symmetry-breaking noise the script adds, random padding / init do not.

Lines rewritten (each must occur exactly once):
  mnist_irnn.py     `epochs = 200` -> `epochs = 1`
  mnist_net2net.py  `epochs = 3` -> `epochs = 1`
The sizes come from the mnist.npz written: 32 / 16 images for IRNN (each a 784-step
sequence: one training step of batch 32), 64 / 32 for net2net (five models).
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "keras"))  # the shared real-Keras helper
from keras2_scripts import epoch_logs, printed_number, run_script  # noqa: E402
from keras_oracle import real_keras  # noqa: E402
from mnist_subset import needs_mnist, write_mnist  # noqa: E402

from kiln.keras import models  # noqa: E402

pytestmark = needs_mnist


def test_mnist_irnn(keras2_cache, real_mnist, capsys):
    write_mnist(keras2_cache, real_mnist, 32, 16)
    namespace = run_script("mnist_irnn", [("epochs = 200", "epochs = 1")])
    out = capsys.readouterr().out

    assert "x_train shape: (32, 784, 1)" in out
    assert "32 train samples" in out and "16 test samples" in out
    model = namespace["model"]
    rnn = model.layers[0]
    assert type(rnn).__name__ == "SimpleRNN" and rnn.activation == "relu"
    config = rnn.get_config()
    assert config["kernel_initializer"]["class_name"] == "RandomNormal"
    assert config["kernel_initializer"]["config"]["stddev"] == 0.001
    assert config["recurrent_initializer"] == {
        "module": "keras.initializers", "class_name": "Identity", "config": {},
        "registered_name": None}
    assert namespace["rmsprop"].learning_rate == pytest.approx(1e-6)

    kernel, recurrent, bias = rnn.get_weights()
    assert kernel.std() == pytest.approx(0.001, rel=0.5)
    # one RMSprop step of 1e-6 leave the identity recurrence nearly as it was
    assert 0 < np.abs(recurrent - np.eye(100)).max() < 1e-4
    logs = epoch_logs(out)
    assert len(logs) == 1 and math.isfinite(logs[0]["val_loss"])
    score = printed_number(out, "IRNN test score:")
    # (the epoch line prints 4 decimals)
    assert score == pytest.approx(logs[0]["val_loss"], abs=6e-5)
    assert printed_number(out, "IRNN test accuracy:") == pytest.approx(
        logs[0]["val_accuracy"], abs=6e-5)

    # the relu recurrence over 784 steps, against Keras 3 with the same weights
    keras = real_keras()
    theirs = keras.Sequential([
        keras.Input((784, 1)), keras.layers.SimpleRNN(100, activation="relu"),
        keras.layers.Dense(10), keras.layers.Activation("softmax")])
    theirs.set_weights(model.get_weights())
    x = namespace["x_test"][:4]
    np.testing.assert_allclose(model.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-5)


def test_mnist_net2net(keras2_cache, real_mnist, capsys, monkeypatch):
    write_mnist(keras2_cache, real_mnist, 64, 32)
    before_training = []  # (model, probe, predictions, weights by layer) as each fit starts
    fit = models.Sequential.fit

    def recording_fit(self, *args, **kwargs):
        probe = kwargs["validation_data"][0][:16]
        before_training.append((self, probe, self.predict(probe, verbose=0),
                                {layer.name: layer.get_weights() for layer in self.layers}))
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(models.Sequential, "fit", recording_fit)
    namespace = run_script("mnist_net2net", [("epochs = 3", "epochs = 1")])
    out = capsys.readouterr().out

    assert "x_train shape: (64, 28, 28, 1) y_train shape: (64, 10)" in out
    assert out.count("Epoch 1/1") == 5
    teacher = namespace["teacher_model"]
    (first, probe, _, _), random_pad, net2wider, random_init, net2deeper = before_training
    assert first is teacher
    expected = teacher.predict(probe, verbose=0)

    def distance(record):
        return np.abs(record[2] - expected).max()

    # net2deeper: identity conv (given by `weights=`) and identity Dense after a relu
    conv_kernel, conv_bias = net2deeper[3]["conv2-deeper"]
    identity = np.zeros((3, 3, 64, 64), np.float32)
    identity[1, 1] = np.eye(64)
    np.testing.assert_array_equal(conv_kernel, identity)
    assert not conv_bias.any()
    np.testing.assert_allclose(net2deeper[2], expected, rtol=1e-4, atol=1e-5)
    # net2wider: the same function up to the script's symmetry-breaking noise
    assert [w.shape for weights in net2wider[3].values() for w in weights] == [
        (3, 3, 1, 128), (128,), (3, 3, 128, 64), (64,), (7 * 7 * 64, 128), (128,),
        (128, 10), (10,)]
    assert distance(net2wider) < 0.005  # measured 7e-4
    assert (net2wider[2].argmax(1) == expected.argmax(1)).all()
    # the baselines start elsewhere
    # (measured 0.3 and 0.03: the teacher has had two steps, its outputs are near uniform)
    assert distance(random_pad) > 0.01 and distance(random_init) > 0.01

    logs = epoch_logs(out)
    assert len(logs) == 5 and all(math.isfinite(log["val_loss"]) for log in logs)
