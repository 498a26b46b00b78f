"""Keras 2.2.4's variational_autoencoder.py runs in kiln with only its imports changed
(from Keras 2.2.4's source distribution on PyPI), on small MNIST-shaped data written as
the Keras cache's mnist.npz.

The script samples z with `K.random_normal` in a Lambda, nests an encoder and a decoder model
in the VAE, builds its loss between layers from `binary_crossentropy(inputs, outputs) *
original_dim` and a KL term of `K` functions, adds it with `vae.add_loss(vae_loss)` and
compiles with no loss (`vae.compile(optimizer='adam')`), then fits on x alone with
`validation_data=(x_test, None)`. keras.utils.plot_model needs pydot and Graphviz (optional):
it is replaced by a recorder. The script reads its options with argparse: no arguments.

Lines rewritten (each must occur exactly once): `epochs = 50` -> `epochs = 3`; `n = 30` ->
`n = 4` (the digit grid: one decoder.predict per digit);
`vae.save_weights('vae_mlp_mnist.h5')` -> `'vae_mlp_mnist.weights.h5'`, since Keras 3, as
kiln, writes weights only in its own format (refusing a legacy .h5 name); and
`end_range = n * digit_size + start_range + 1` without the `+ 1`: the script puts n + 1 tick
locations under n labels, which matplotlib 3.5 and later refuse (with any Keras).
"""

import math
import sys

import numpy as np
import pytest
from keras2_scripts import epoch_logs, run_script

from kiln import keras


def write_digits(folder, train=512, test=128, seed=0):
    """mnist.npz with uint8 28x28 images: blurred strokes, one pattern per class."""
    rng = np.random.default_rng(seed)
    patterns = rng.random((10, 28, 28)) ** 4 * 255

    def images(count):
        labels = rng.integers(0, 10, count).astype(np.uint8)
        noise = rng.random((count, 28, 28)) * 40
        return np.clip(patterns[labels] + noise, 0, 255).astype(np.uint8), labels

    (x_train, y_train), (x_test, y_test) = images(train), images(test)
    np.savez(folder / "mnist.npz", x_train=x_train, y_train=y_train, x_test=x_test,
             y_test=y_test)


def test_variational_autoencoder(keras2_cache, capsys, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # the script saves its pictures and weights there
    monkeypatch.setattr(sys, "argv", ["variational_autoencoder.py"])
    plots = []
    monkeypatch.setattr(keras.utils, "plot_model",
                        lambda model, **kwargs: plots.append((model.name, kwargs["to_file"])))
    write_digits(keras2_cache)
    namespace = run_script("variational_autoencoder", [
        ("epochs = 50", "epochs = 3"),
        ("    n = 30", "    n = 4"),
        ("        vae.save_weights('vae_mlp_mnist.h5')",
         "        vae.save_weights('vae_mlp_mnist.weights.h5')"),
        ("    end_range = n * digit_size + start_range + 1",
         "    end_range = n * digit_size + start_range")])
    out = capsys.readouterr().out
    logs = epoch_logs(out)
    assert len(logs) == 3
    losses = [log["loss"] for log in logs]
    assert all(math.isfinite(loss) for loss in losses)
    assert losses[-1] < losses[0], losses
    assert logs[-1]["val_loss"] < logs[0]["val_loss"]
    assert [name for name, _ in plots] == ["encoder", "decoder", "vae_mlp"]

    vae, encoder, decoder = namespace["vae"], namespace["encoder"], namespace["decoder"]
    x = namespace["x_test"][:16]
    # the loss the script added, recomputed with numpy from the trained weights: the
    # reconstruction term reads the VAE's output, which samples z afresh, so evaluate
    # is compared with the mean of the KL term plus a reconstruction bounded by the data
    z_mean, z_log_var, _ = encoder.predict(x, verbose=0)
    kl = np.mean(-0.5 * np.sum(1 + z_log_var - z_mean ** 2 - np.exp(z_log_var), axis=-1))
    decoded = decoder.predict(z_mean, verbose=0)
    assert decoded.shape == (16, 784) and 0 <= decoded.min() and decoded.max() <= 1
    assert vae.evaluate(x, verbose=0) > kl  # the reconstruction term is positive
    assert (tmp_path / "vae_mlp" / "digits_over_latent.png").stat().st_size > 0
    assert (tmp_path / "vae_mlp_mnist.weights.h5").stat().st_size > 0
