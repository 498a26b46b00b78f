"""`kiln bench soak`: its resume check and RSS slope on made-up logs, and one short real run
(a few epochs, a kill or two) end to end."""

import numpy as np

from kiln.bench import soak


def epoch(number, weights_hash, rss=100_000):
    return {"event": "epoch", "epoch": number, "hash": weights_hash, "rss_kib": rss}


def test_a_resume_after_the_last_backup_with_its_weights_is_verified():
    before = [epoch(0, "a"), epoch(1, "b"), epoch(2, "c")]
    assert soak._verify_resume(before, {"epoch": 3, "hash": "c"})[0]
    # killed after epoch 2 was logged but before its backup was written: one epoch earlier
    assert soak._verify_resume(before, {"epoch": 2, "hash": "b"})[0]


def test_a_resume_from_a_stale_or_wrong_checkpoint_is_a_failure():
    before = [epoch(0, "a"), epoch(1, "b"), epoch(2, "c")]
    good, why = soak._verify_resume(before, {"epoch": 3, "hash": "b"})
    assert not good and "weights unlike epoch 2" in why
    good, why = soak._verify_resume(before, {"epoch": 1, "hash": "a"})  # two epochs lost
    assert not good and "last finished epoch was 2" in why
    assert not soak._verify_resume([], {"epoch": 4, "hash": "x"})[0]


def test_an_epoch_run_again_after_a_resume_counts_with_its_latest_weights():
    before = [epoch(0, "a"), epoch(1, "b"), epoch(1, "b2")]  # epoch 1 ran twice
    assert soak._verify_resume(before, {"epoch": 2, "hash": "b2"})[0]
    assert not soak._verify_resume(before, {"epoch": 2, "hash": "b"})[0]


def test_rss_slope_is_fitted_within_runs_after_their_warm_up():
    # each run starts higher (a new process) but is flat after its first epochs: slope 0,
    # although RSS over the whole soak rises
    flat = [[(e, 1000 + 50 * run + (400 if e - 10 * run < 2 else 0))
             for e in range(10 * run, 10 * run + 10)] for run in range(3)]
    slope, points = soak.within_run_slope(flat)
    assert abs(slope) < 1e-9 and points == 24
    leaking = [[(e, 1000 + 64 * e) for e in range(10 * run, 10 * run + 10)] for run in range(3)]
    assert np.isclose(soak.within_run_slope(leaking)[0], 64.0)


def test_a_short_soak_kills_resumes_and_finishes(tmp_path):
    lines = []
    ok, result = soak.soak(epochs=5, seed=3, kill_every=2, samples=256, folder=str(tmp_path),
                           out=lines.append)
    assert ok, lines
    assert result["kills"] >= 1 and result["verified"] == result["resumes"] >= 1
    assert lines[-1].startswith("soak: epochs=5 ")
