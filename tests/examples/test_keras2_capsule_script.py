"""Keras 2's cifar10_cnn_capsule.py runs in kiln with only its imports changed (from Keras 2.2.4's
source distribution on PyPI), on real CIFAR-10 images (the sample shipped in
$KILN_DATASETS/cifar10-sample).

Its Capsule layer is written with the Keras 2 backend: K.conv1d with its kernel weight,
K.reshape with K.shape's batch, K.permute_dimensions, slicing, K.zeros_like, a softmax of
K.exp / K.max / K.sum over the capsule axis, and three routing iterations of K.batch_dot
under Keras 2.2.4's axes rules (a 3D tensor against a 4D one); the margin loss is K.sum /
K.square / K.relu, and the model's input has no fixed image size (None, None, 3), trained
through ImageDataGenerator with fit_generator.

Checked: the loss falls; the capsule layer's output and the model's (read through K.function)
equal the routing written in numpy; and a small capsule network built with the same K calls
predicts and takes a training step as the same network written with Keras 3's ops.

Lines rewritten (each must occur exactly once): `epochs = 100` -> `epochs = 3` and
`batch_size = 128` -> `batch_size = 32` (64 training images, 32 for validation).
"""

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from keras2_scripts import epoch_logs, run_script

sys.path.insert(0, str(Path(__file__).parents[1] / "keras"))  # the shared real-Keras helper
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402
from kiln.keras import backend as K  # noqa: E402
from kiln.keras.datasets import cifar10  # noqa: E402

DATASETS = os.environ.get("KILN_DATASETS")
HAS_SAMPLE = bool(DATASETS) and (Path(DATASETS) / "cifar10-sample").is_dir()
pytestmark = [
    pytest.mark.skipif(not HAS_SAMPLE, reason="needs $KILN_DATASETS/cifar10-sample"),
    pytest.mark.filterwarnings("ignore:Model.fit_generator is deprecated"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def squash(x):
    squared = (x * x).sum(-1, keepdims=True) + 1e-7
    return np.sqrt(squared) / (0.5 + squared) * x


def routing(inputs, kernel, num_capsule, dim_capsule, routings=3):
    """The script's Capsule.call in numpy (batch_dot's 2.2.4 rules written as einsums)."""
    batch, count, _ = inputs.shape
    hat = (inputs @ kernel[0]).reshape(batch, count, num_capsule, dim_capsule)
    hat = hat.transpose(0, 2, 1, 3)
    logits = np.zeros(hat.shape[:3], np.float32)
    for i in range(routings):
        c = np.exp(logits - logits.max(1, keepdims=True))
        c /= c.sum(1, keepdims=True)
        o = squash(np.einsum("bni,bnid->bnd", c, hat))
        if i < routings - 1:
            logits = np.einsum("bnd,bnid->bni", o, hat)
    return o


@pytest.fixture(scope="module")
def sample():
    """Read before keras2_cache unsets KILN_DATASETS."""
    x, y = cifar10.load_sample()
    return x, y.reshape(-1, 1)  # (N, 1), as cifar10.load_data


def test_cifar10_cnn_capsule(sample, keras2_cache, capsys, monkeypatch):
    x, y = sample
    monkeypatch.setattr(cifar10, "load_data", lambda *args: ((x[:64], y[:64]),
                                                             (x[64:96], y[64:96])))
    namespace = run_script("cifar10_cnn_capsule", [("epochs = 100", "epochs = 3"),
                                                   ("batch_size = 128", "batch_size = 32")])
    out = capsys.readouterr().out
    assert "Using real-time data augmentation." in out
    logs = epoch_logs(out)
    assert len(logs) == 3
    assert all(math.isfinite(log["loss"]) for log in logs)
    assert logs[-1]["loss"] < logs[0]["loss"], logs

    model = namespace["model"]
    capsule = model.get_layer("capsule")
    assert capsule.output.shape == (None, 10, 16)
    images = namespace["x_test"][:4]
    read = K.function([model.input], [model.get_layer("reshape").output, capsule.output,
                                      model.output])
    features, capsules, lengths = read([images])
    assert features.shape == (4, 100, 128)  # 32x32 images: 10x10 positions
    expected = routing(features, capsule.get_weights()[0], 10, 16)
    np.testing.assert_allclose(capsules, expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(lengths, np.sqrt((expected ** 2).sum(2)), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict(images, verbose=0), lengths, rtol=1e-5,
                               atol=1e-7)


def capsule_layer(module):
    """The script's Capsule (3 routings, shared weights) in kiln with K, in Keras 3 with
    keras.ops (batch_dot's two products as einsums)."""
    class Capsule(module.layers.Layer):
        def build(self, input_shape):
            self.kernel = self.add_weight(name="capsule_kernel", shape=(1, input_shape[-1],
                                                                        3 * 4))

        def call(self, inputs):
            if module is kk:
                hat = K.conv1d(inputs, self.kernel)
                hat = K.reshape(hat, (K.shape(inputs)[0], K.shape(inputs)[1], 3, 4))
                hat = K.permute_dimensions(hat, (0, 2, 1, 3))
                b = K.zeros_like(hat[:, :, :, 0])
                for i in range(3):
                    ex = K.exp(b - K.max(b, axis=1, keepdims=True))
                    c = ex / K.sum(ex, axis=1, keepdims=True)
                    s = K.batch_dot(c, hat, [2, 2])
                    norm = K.sum(K.square(s), -1, keepdims=True) + K.epsilon()
                    o = K.sqrt(norm) / (0.5 + norm) * s
                    if i < 2:
                        b = K.batch_dot(o, hat, [2, 3])
                return o
            ops = module.ops
            hat = ops.conv(inputs, self.kernel)
            hat = ops.transpose(ops.reshape(hat, (-1, inputs.shape[1], 3, 4)), (0, 2, 1, 3))
            b = ops.zeros_like(hat[:, :, :, 0])
            for i in range(3):
                c = ops.softmax(b, axis=1)
                s = ops.einsum("bni,bnid->bnd", c, hat)
                norm = ops.sum(ops.square(s), -1, keepdims=True) + 1e-7
                o = ops.sqrt(norm) / (0.5 + norm) * s
                if i < 2:
                    b = ops.einsum("bnd,bnid->bni", o, hat)
            return o

    return Capsule(name="capsule")


def test_capsule_layer_with_k_functions_trains_as_keras():
    def build(module):
        inputs = module.Input((5, 5, 2))
        x = module.layers.Conv2D(6, 3, activation="relu", name="features")(inputs)
        x = module.layers.Reshape((9, 6))(x)
        x = module.layers.Flatten()(capsule_layer(module)(x))
        return module.Model(inputs, module.layers.Dense(3, activation="softmax")(x))

    check_against_keras(build, optimizers=("sgd",), steps=1)
