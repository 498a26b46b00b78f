"""The augmentation-cost harness runs end to end (plumbing: its figure is in its output)."""

from kiln.bench import augmentation
from kiln.bench.__main__ import main


def test_epoch_seconds_times_both_epochs():
    plain, augmented = augmentation.epoch_seconds(samples=64, rounds=1)
    assert plain > 0 and augmented > 0


def test_the_command_prints_the_ratio(capsys):
    assert main(["augmentation", "--samples", "64", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "cifar10_cnn channels_last, 64 samples (2 steps of 32)" in out and "%)" in out
