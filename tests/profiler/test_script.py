"""`kiln profile script.py` runs a training script and profiles the first model to fit."""

import json

import pytest
from small_model import PEAKS

from kiln import profile_script as script
from kiln.cli import main
from kiln.keras.models.model import Model

SCRIPT = """
import sys
sys.path.insert(0, {helpers!r})
from small_model import data, small_model
model = small_model()
x, y = data(samples=24)
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
open({after!r}, "w").write(" ".join(sys.argv[1:]))
"""


@pytest.fixture
def training_script(tmp_path, monkeypatch, request):
    monkeypatch.setattr(script, "measure_peaks", lambda: dict(PEAKS))
    path = tmp_path / "train.py"
    after = tmp_path / "after.txt"
    path.write_text(SCRIPT.format(helpers=str(request.path.parent), after=str(after)))
    return path, after


def test_profiles_the_first_fit_and_stops_the_script(training_script, tmp_path, capsys):
    path, after = training_script
    trace = tmp_path / "trace.json"
    assert main(["profile", str(path), "--steps", "2", "--warmup", "1",
                 "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "calls, slowest first:" in out and "conv_b+relu_b" in out
    assert "2 recorded steps of batch 4" in out and "profiler overhead:" in out
    assert not after.exists()  # stopped after the profiled batches
    with open(trace) as f:
        assert any(e.get("name") == "conv_a" for e in json.load(f)["traceEvents"])
    assert "fit" not in Model.__dict__  # fit is Keras's own again


def test_keep_running_lets_the_script_finish(training_script, capsys):
    path, after = training_script
    assert main(["profile", str(path), "--steps", "1", "--keep-running", "--top", "3", "--",
                 "a", "b"]) == 0
    assert after.read_text() == "a b"
    out = capsys.readouterr().out
    assert "1 recorded steps of batch 4" in out
    calls = out[:out.index("layers, forward and backward:")].strip().splitlines()
    assert len(calls) == 2 + 3 + 1 and calls[-1].endswith("more calls)")
