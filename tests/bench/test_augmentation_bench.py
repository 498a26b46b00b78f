"""The augmentation-cost harness runs end to end (plumbing: its figure is in its output)."""

from kiln.bench import augmentation
from kiln.bench.__main__ import main


def test_epoch_seconds_times_both_epochs():
    plain, augmented = augmentation.epoch_seconds(samples=64, rounds=1)
    assert plain > 0 and augmented > 0


def test_the_command_prints_the_ratio(capsys):
    assert main(["augmentation", "--kind", "generator", "--samples", "64", "--rounds",
                 "1"]) == 0
    out = capsys.readouterr().out
    assert "cifar10_cnn channels_last, 64 samples (2 steps of 32)" in out and "%)" in out


def test_the_ratio_is_signed_both_ways(capsys, monkeypatch):
    """An augmented epoch faster than the plain one (noise) reads -2.9%, not +-2.9%."""
    for seconds, printed in (((2.0, 1.942), "(-2.9%)"), ((2.0, 2.1), "(+5.0%)")):
        monkeypatch.setattr(augmentation, "epoch_seconds", lambda *_, s=seconds: s)
        assert main(["augmentation", "--kind", "generator", "--samples", "64", "--rounds",
                     "1"]) == 0
        assert printed in capsys.readouterr().out


def test_the_cnn_with_augmentation_layers_is_the_plain_cnn_behind_them():
    plain, shape, batch = augmentation.small_cnn()
    augmented, _, _ = augmentation.small_cnn(augment=True)
    first = augmented.layers[:3]
    assert [type(layer).__name__ for layer in first] == ["RandomFlip", "RandomRotation",
                                                         "RandomZoom"]
    assert first[0].mode == "horizontal" and first[1].factor == (-0.1, 0.1)
    assert first[2].height_factor == 0.1 and first[2].width_factor is None
    assert [type(layer).__name__ for layer in augmented.layers[3:]] == [
        type(layer).__name__ for layer in plain.layers]
    assert augmented.count_params() == plain.count_params() == 1_250_858
    assert (shape, batch) == ((32, 32, 3), 32)


def test_layer_epoch_seconds_times_both_epochs():
    plain, augmented = augmentation.layer_epoch_seconds(samples=64, rounds=1)
    assert plain > 0 and augmented > 0


def test_the_command_prints_the_augmentation_layers_ratio(capsys, monkeypatch):
    monkeypatch.setattr(augmentation, "layer_epoch_seconds", lambda *_: (2.0, 2.1))
    assert main(["augmentation", "--kind", "layers", "--samples", "64"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cifar10_cnn channels_last, 64 samples (2 steps of 32): epoch 2.00 s")
    assert ('2.10 s with RandomFlip("horizontal") + RandomRotation(0.1) + RandomZoom(0.1) in '
            "the model (+5.0%; target within +10%)") in out
    assert "ImageDataGenerator" not in out and len(out.strip().splitlines()) == 1


def test_the_augmentation_layers_act_in_training_steps_only():
    """augmentation_layers in front of a Dense classifier (no Dropout, whose masks would
    differ anyway), from the plain classifier's weights: the same test loss, another training
    loss (the step trains on flipped, rotated and zoomed images)."""
    import numpy as np

    from kiln import keras

    def classifier(front):
        model = keras.Sequential([keras.Input((32, 32, 3)), *front, keras.layers.Flatten(),
                                  keras.layers.Dense(10, activation="softmax")])
        model.compile(loss="categorical_crossentropy", optimizer="sgd")
        return model

    plain = classifier([])
    augmented = classifier(augmentation.augmentation_layers())
    augmented.set_weights(plain.get_weights())
    rng = np.random.default_rng(0)
    x = rng.random((32, 32, 32, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)]
    tested = [float(np.ravel(model.test_on_batch(x, y))[0]) for model in (plain, augmented)]
    assert tested[0] == tested[1]
    trained = [float(np.ravel(model.train_on_batch(x, y))[0]) for model in (plain, augmented)]
    assert trained[0] == tested[0] and abs(trained[1] - tested[1]) > 1e-4
