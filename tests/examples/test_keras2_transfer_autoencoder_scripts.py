"""Keras 2's mnist_denoising_autoencoder.py and mnist_transfer_cnn.py run in kiln with only their
imports changed (from Keras 2.2.4's source distribution on PyPI), on a subset of the real MNIST
written as the Keras cache's mnist.npz (needs $KILN_DATASETS/mnist/).

mnist_denoising_autoencoder.py: an encoder and a decoder model (strided Conv2D /
Conv2DTranspose), the decoder sized with `K.int_shape`, nested in one autoencoder trained with
mse; it saves a picture of 300 test digits (matplotlib with the Agg backend, PIL).
mnist_transfer_cnn.py: a convnet trained on the digits 0-4, then `layer.trainable = False` on
its feature layers and compiled again to train the classifier on 5-9: the frozen weights must
not move in the second training, the classifier's must.

Lines rewritten (each must occur exactly once):
  mnist_denoising_autoencoder.py  `epochs=30,` -> `epochs=2,` and `batch_size = 128` -> 32
      (the last Conv2DTranspose, 32 channels to 1, runs oneDNN's reference kernel in its
      backward passes: seconds per step at batch 128)
  mnist_transfer_cnn.py  `epochs = 5` -> `epochs = 3`
"""


import numpy as np
import pytest
from keras2_scripts import epoch_logs, run_script
from mnist_subset import losses_fall, needs_mnist, write_mnist

from kiln.keras import models

pytestmark = needs_mnist


def test_mnist_denoising_autoencoder(keras2_cache, real_mnist, capsys, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("PIL")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # the script saves its picture in the working directory
    write_mnist(keras2_cache, real_mnist, 64, 300)  # the picture takes 300 test digits
    namespace = run_script("mnist_denoising_autoencoder", [
        ("                epochs=30,", "                epochs=2,"),
        ("batch_size = 128", "batch_size = 32")])
    out = capsys.readouterr().out
    logs = epoch_logs(out)
    assert len(logs) == 2
    losses_fall(logs)
    assert logs[-1]["val_loss"] < logs[0]["val_loss"]

    assert namespace["shape"] == (None, 7, 7, 64)  # K.int_shape of the encoder's last conv
    encoder, decoder = namespace["encoder"], namespace["decoder"]
    autoencoder = namespace["autoencoder"]
    x = namespace["x_test_noisy"][:8]
    np.testing.assert_allclose(autoencoder.predict(x, verbose=0),
                               decoder.predict(encoder.predict(x, verbose=0), verbose=0),
                               rtol=1e-4, atol=1e-6)
    assert namespace["x_decoded"].shape == (300, 28, 28, 1)
    assert namespace["imgs"].shape == (30 * 28, 30 * 28)  # 10 rows of 3 lines, 30 columns
    assert (tmp_path / "corrupted_and_denoised.png").stat().st_size > 0


def test_mnist_transfer_cnn(keras2_cache, real_mnist, capsys, monkeypatch):
    write_mnist(keras2_cache, real_mnist, 200, 60)
    starts = []  # the weights of each layer as each of the two trainings starts
    fit = models.Sequential.fit

    def recording_fit(self, *args, **kwargs):
        starts.append([layer.get_weights() for layer in self.layers])
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(models.Sequential, "fit", recording_fit)
    namespace = run_script("mnist_transfer_cnn", [("epochs = 5", "epochs = 3")])
    out = capsys.readouterr().out
    logs = epoch_logs(out)
    assert len(logs) == 6 and out.count("Test accuracy:") == 2
    losses_fall(logs[:3])
    losses_fall(logs[3:])

    model = namespace["model"]
    end = [layer.get_weights() for layer in model.layers]
    features = {id(layer) for layer in namespace["feature_layers"]}
    assert len(starts) == 2
    for index, layer in enumerate(model.layers):
        for first, second, last in zip(starts[0][index], starts[1][index], end[index],
                                       strict=True):
            assert not np.array_equal(first, second)  # everything trained on 0-4
            if id(layer) in features:
                np.testing.assert_array_equal(second, last)  # frozen for 5-9
            else:
                assert not np.array_equal(second, last)
    assert len(model.trainable_weights) == 4 and len(model.non_trainable_weights) == 4
