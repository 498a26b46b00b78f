"""Keras 2's antirectifier.py and mnist_siamese.py, scripts written with the Keras 2 backend (`from
keras import backend as K`), run in kiln with only their imports changed (from Keras 2.2.4's
source distribution on PyPI), on a subset of the real MNIST written as the Keras cache's
mnist.npz (needs $KILN_DATASETS/mnist/).

antirectifier.py: a custom layer whose call() is K.mean, K.l2_normalize, K.relu and
K.concatenate; its output (read through K.function) is compared with numpy's formula.
mnist_siamese.py: a shared base network on two inputs, a Lambda computing the Euclidean
distance with K.sqrt / K.maximum / K.sum / K.square / K.epsilon, the contrastive loss written
with K functions (traced into the step), and an `accuracy` metric written with K.equal /
K.cast. Its predictions and evaluated loss are compared with numpy on the base network's
outputs. (The script's `accuracy` metric compares y_true of shape (n,) with a (n, 1) output,
so under Keras 3's rules, which kiln follows, it averages a broadcast (n, n) comparison;
Keras 2 had reshaped 1-D targets to (n, 1) first. The script's own final accuracy is exact.)

Lines rewritten (each must occur exactly once):
  antirectifier.py  `epochs = 40` -> `epochs = 3`, and its reshapes of exactly 60000 / 10000
                    images to `reshape(-1, 784)`
  mnist_siamese.py  `epochs = 20` -> `epochs = 3`
"""

import re

import numpy as np
import pytest
from keras2_scripts import epoch_logs, run_script
from mnist_subset import losses_fall, needs_mnist, write_mnist

pytestmark = needs_mnist


def test_antirectifier(keras2_cache, real_mnist, capsys):
    from kiln.keras import backend as K

    write_mnist(keras2_cache, real_mnist, 256, 64)
    namespace = run_script("antirectifier", [
        ("epochs = 40", "epochs = 3"),
        ("x_train = x_train.reshape(60000, 784)", "x_train = x_train.reshape(-1, 784)"),
        ("x_test = x_test.reshape(10000, 784)", "x_test = x_test.reshape(-1, 784)")])
    out = capsys.readouterr().out
    assert "256 train samples" in out and "64 test samples" in out
    logs = epoch_logs(out)
    assert len(logs) == 3
    losses_fall(logs)

    model = namespace["model"]
    dense, antirectifier = model.layers[0], model.layers[1]
    assert type(antirectifier).__name__ == "Antirectifier"
    assert antirectifier.compute_output_shape((None, 256)) == (None, 512)
    x = namespace["x_test"][:8]
    (out,) = K.function([model.input], [antirectifier.output])([x])
    kernel, bias = dense.get_weights()
    h = x @ kernel + bias
    h -= h.mean(axis=1, keepdims=True)
    h /= np.sqrt(np.maximum((h * h).sum(axis=1, keepdims=True), 1e-12))
    np.testing.assert_allclose(out, np.concatenate([np.maximum(h, 0), np.maximum(-h, 0)], 1),
                               rtol=1e-4, atol=1e-6)


def test_mnist_siamese(keras2_cache, real_mnist, capsys):
    write_mnist(keras2_cache, real_mnist, 300, 150)
    namespace = run_script("mnist_siamese", [("epochs = 20", "epochs = 3")])
    out = capsys.readouterr().out
    logs = epoch_logs(out)
    assert len(logs) == 3 and "accuracy" in logs[0]
    losses_fall(logs)

    model, base = namespace["model"], namespace["base_network"]
    assert model.count_params() == base.count_params()  # one set of weights, two branches
    pairs, labels = namespace["te_pairs"][:40], namespace["te_y"][:40]
    a = base.predict(pairs[:, 0], verbose=0)
    b = base.predict(pairs[:, 1], verbose=0)
    expected = np.sqrt(np.maximum(((a - b) ** 2).sum(1, keepdims=True), 1e-7))
    distance = model.predict([pairs[:, 0], pairs[:, 1]], verbose=0)
    np.testing.assert_allclose(distance, expected, rtol=1e-4, atol=1e-6)

    contrastive = np.mean(labels[:, None] * distance ** 2
                          + (1 - labels[:, None]) * np.maximum(1 - distance, 0) ** 2)
    loss, _ = model.evaluate([pairs[:, 0], pairs[:, 1]], labels, batch_size=40, verbose=0)
    assert loss == pytest.approx(contrastive, rel=1e-4)

    te_acc = float(re.search(r"\* Accuracy on test set: ([\d.]+)%", out).group(1))
    y_pred = model.predict([namespace["te_pairs"][:, 0], namespace["te_pairs"][:, 1]],
                           verbose=0)
    assert te_acc == pytest.approx(100 * np.mean((y_pred.ravel() < 0.5) == namespace["te_y"]),
                                   abs=0.01)
