"""TensorBoard(profile_batch=...) records those batches of fit and writes the trace where
TensorBoard's profile plugin reads it, without changing what fit trains."""

import glob
import gzip
import json
import os
import socket
import time

import numpy as np
import pytest
from small_model import PEAKS, data, small_model

import kiln.profiler
from kiln.keras.callbacks import Callback, TensorBoard

pytest.importorskip("tensorboard")


def fit(model, callbacks):
    x, y = data(samples=20)
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=callbacks)


def test_profiled_batches_become_a_profile_plugin_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(kiln.profiler, "measure_peaks", lambda: dict(PEAKS))
    reference = small_model()
    weights = reference.get_weights()
    model = small_model(weights)
    callback = TensorBoard(log_dir=tmp_path / "logs", profile_batch=(2, 3), write_graph=False)
    fit(model, [callback])
    files = glob.glob(os.fspath(tmp_path / "logs" / "train" / "plugins" / "profile" / "*" /
                                f"{socket.gethostname()}.trace.json.gz"))
    assert len(files) == 1
    with gzip.open(files[0], "rt") as f:
        events = json.load(f)["traceEvents"]
    profile = callback._batch_profiler.profile
    assert [e["name"] for e in events if e.get("cat") == "step"] == ["step 1", "step 2"]
    assert sum(e["ph"] == "X" and e.get("cat") != "step" for e in events) == \
        2 * len(profile.infos)
    assert profile.summary()["plain_step_seconds"] is not None  # batches 4 and 5
    assert "_plan" not in model.__dict__
    fit(reference, [])
    for trained, expected in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(trained, expected, rtol=1e-6, atol=1e-7)


def test_profile_batch_zero_writes_no_trace(tmp_path):
    fit(small_model(), [TensorBoard(log_dir=tmp_path / "logs", write_graph=False)])
    assert not (tmp_path / "logs" / "train" / "plugins").exists()


@pytest.mark.parametrize("value", [-1, (3, 2), "a", (1, 2, 3), 1.5])
def test_bad_profile_batch_is_named(value, tmp_path):
    with pytest.raises(ValueError, match="TensorBoard: argument profile_batch must be"):
        TensorBoard(log_dir=tmp_path, profile_batch=value)


def test_a_fit_that_raised_does_not_leave_the_model_watched(tmp_path, monkeypatch):
    monkeypatch.setattr(kiln.profiler, "measure_peaks", lambda: dict(PEAKS))
    model = small_model()
    callback = TensorBoard(log_dir=tmp_path / "logs", profile_batch=2, write_graph=False)

    class Interrupt(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:  # after global batch 2, recorded: on_train_end never runs
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fit(model, [Interrupt(), callback])
    started = time.perf_counter_ns()
    fit(model, [callback])  # a new session, counting this fit's batches from 1
    assert "_plan" not in model.__dict__
    records = callback._batch_profiler.profile.records
    assert len(records) == 1 and records[0].start > started
