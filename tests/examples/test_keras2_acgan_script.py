"""Keras 2's mnist_acgan.py runs in kiln with only its imports changed (from Keras 2.2.4's
source distribution on PyPI), on a subset of the real MNIST written as the Keras cache's
mnist.npz (needs $KILN_DATASETS/mnist/).

The script: a conditional generator (Embedding of the class label multiplied into the latent
vector, a nested Sequential of Dense, Reshape, three Conv2DTranspose and BatchNormalization)
and a discriminator with two outputs (real / fake and the class), compiled with two losses;
then `discriminator.trainable = False`, a combined model generator -> discriminator compiled,
and alternating `train_on_batch` with per-output sample weights, `predict`, `evaluate`,
`metrics_names`, `save_weights(path, True)` (overwrite given by position, as Keras 2 did) and
a PIL picture.

What it trains under Keras 3's rules, which kiln follows: the discriminator's `trainable` is
read when a training step is made, not when it was compiled, so once the script sets it to
False the discriminator's own `train_on_batch` leaves its weights as they are (Keras 2 had
kept the compile-time flag; Keras 3 on JAX moves nothing, checked in the first test below).
The generator trains through the combined model. The combined model's two outputs come from
one nested model, so Keras names both losses 'functional_loss' and its list results repeat
one value for both names; kiln's do too (tested against Keras in
tests/keras/trainers/test_on_batch_against_keras.py).

Lines rewritten (each must occur exactly once): `epochs = 100` -> 1, and the two
`save_weights` file names from '.hdf5' to '.weights.h5': Keras 3, as kiln, reads Keras 2's
legacy weight files but writes weights only in its own format (the same rewrite as in the
variational_autoencoder test). The 400 training
images give 4 batches of 100 (the script's display also takes the first 400), 50 test images.
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from keras2_scripts import run_script, six_moves_shim
from mnist_subset import needs_mnist, write_mnist

sys.path.insert(0, str(Path(__file__).parents[1] / "keras"))  # the shared real-Keras helper
from keras_oracle import real_keras  # noqa: E402

from kiln import keras as kiln_keras  # noqa: E402
from kiln.keras import models  # noqa: E402


def frozen_after_compile(K):
    """The script's pattern on a small model: the weight change that the discriminator's own
    train_on_batch makes, and the loss it reports, after `trainable = False` set post-compile
    and a combined model compiled around it."""
    inputs = K.Input((4,))
    discriminator = K.Model(inputs, K.layers.Dense(1, activation="sigmoid", name="d")(inputs))
    discriminator.compile(optimizer=K.optimizers.Adam(0.01), loss="binary_crossentropy")
    latent = K.Input((3,))
    generator = K.Sequential([K.Input((3,)), K.layers.Dense(4, name="g")])
    discriminator.trainable = False
    combined = K.Model(latent, discriminator(generator(latent)))
    combined.compile(optimizer=K.optimizers.Adam(0.01), loss="binary_crossentropy")
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=w.shape).astype("float32") for w in discriminator.get_weights()]
    discriminator.set_weights(weights)
    x, y = rng.normal(size=(8, 4)).astype("float32"), np.full((8, 1), 0.9, "float32")
    loss = discriminator.train_on_batch(x, y)
    moved = [np.abs(a - b).max() for a, b in zip(discriminator.get_weights(), weights)]
    g_before = generator.get_weights()
    combined.train_on_batch(rng.normal(size=(8, 3)).astype("float32"), y)
    g_moved = [np.abs(a - b).max() for a, b in zip(generator.get_weights(), g_before)]
    return float(np.ravel(loss)[0]), moved, g_moved


def test_a_model_frozen_after_compile_trains_as_in_keras3():
    keras = real_keras()
    keras.utils.clear_session()
    theirs = frozen_after_compile(keras)
    ours = frozen_after_compile(kiln_keras)
    assert theirs[1] == [0.0, 0.0] and ours[1] == [0.0, 0.0]  # the discriminator stays
    assert ours[0] == pytest.approx(theirs[0], rel=1e-5)
    assert min(theirs[2]) > 0 and min(ours[2]) > 0  # the generator trains


@needs_mnist
def test_mnist_acgan(keras2_cache, real_mnist, capsys, monkeypatch, tmp_path):
    pytest.importorskip("PIL")
    six_moves_shim(monkeypatch)
    monkeypatch.chdir(tmp_path)  # weights, the picture and the history go there
    write_mnist(keras2_cache, real_mnist, 400, 50)
    calls = []  # (model name, loss values, weights before, weights after) per train_on_batch
    train_on_batch = models.Model.train_on_batch

    def recording(self, *args, **kwargs):
        before = self.get_weights()
        result = train_on_batch(self, *args, **kwargs)
        calls.append((self.name, np.ravel(result).tolist(), before, self.get_weights()))
        return result

    monkeypatch.setattr(models.Model, "train_on_batch", recording)
    namespace = run_script("mnist_acgan", [
        ("    epochs = 100", "    epochs = 1"),
        ("            'params_generator_epoch_{0:03d}.hdf5'.format(epoch), True)",
         "            'params_generator_epoch_{0:03d}.weights.h5'.format(epoch), True)"),
        ("            'params_discriminator_epoch_{0:03d}.hdf5'.format(epoch), True)",
         "            'params_discriminator_epoch_{0:03d}.weights.h5'.format(epoch), True)")])
    out = capsys.readouterr().out

    discriminator, generator = namespace["discriminator"], namespace["generator"]
    combined = namespace["combined"]
    assert discriminator.metrics_names == ["loss", "generation_loss", "auxiliary_loss"]
    assert [call[0] for call in calls] == [discriminator.name, combined.name] * 4
    for name, losses, before, after in calls:
        assert len(losses) == 3 and all(math.isfinite(v) for v in losses)
        if name == discriminator.name:
            assert losses[0] == pytest.approx(losses[1] + losses[2], rel=1e-4)
            for old, new in zip(before, after, strict=True):  # frozen after compile
                np.testing.assert_array_equal(old, new)
    generator_weights = len(generator.trainable_weights)
    moved = [not np.array_equal(old, new)
             for old, new in zip(calls[1][2], calls[1][3], strict=True)]
    assert sum(moved) >= generator_weights  # the generator's weights all train
    for row in ("generator (train)", "generator (test)", "discriminator (train)",
                "discriminator (test)"):
        assert row in out

    # save_weights(path, True): files that load back into the same models
    saved = tmp_path / "params_generator_epoch_001.weights.h5"
    assert saved.stat().st_size > 0
    assert (tmp_path / "params_discriminator_epoch_001.weights.h5").stat().st_size > 0
    trained = generator.get_weights()
    generator.set_weights([np.zeros_like(w) for w in trained])
    generator.load_weights(str(saved))
    for loaded, expected in zip(generator.get_weights(), trained, strict=True):
        np.testing.assert_array_equal(loaded, expected)
    from PIL import Image

    with Image.open(tmp_path / "plot_epoch_001_generated.png") as image:
        assert image.size == (21 * 28, 40 * 28)  # 10 generated rows, a separator, 10 real
    assert (tmp_path / "acgan-history.pkl").stat().st_size > 0
