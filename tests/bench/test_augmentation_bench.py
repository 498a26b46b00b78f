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


def test_the_ratio_is_signed_both_ways(capsys, monkeypatch):
    """An augmented epoch faster than the plain one (noise) reads -2.9%, not +-2.9%."""
    for seconds, printed in (((2.0, 1.942), "(-2.9%)"), ((2.0, 2.1), "(+5.0%)")):
        monkeypatch.setattr(augmentation, "epoch_seconds", lambda *_, s=seconds: s)
        assert main(["augmentation", "--samples", "64", "--rounds", "1"]) == 0
        assert printed in capsys.readouterr().out
