"""The Chrome trace / Perfetto JSON of a profile, and its copy for TensorBoard's profile
plugin, read back as JSON."""

import gzip
import json
import os
import socket

import pytest
from small_model import BATCH, PEAKS, data, small_model

import kiln.profiler as profiler


@pytest.fixture(scope="module")
def profiled():
    x, y = data()
    return profiler.profile(small_model(), x, y, batch_size=BATCH, steps=2, warmup=0,
                            peaks=PEAKS)


def check_trace(trace, profile):
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(tracks.values()) == ["backward", "forward", "steps", "update"]
    slices = [e for e in events if e["ph"] == "X" and tracks[e["tid"]] != "steps"]
    assert len(slices) == 2 * len(profile.infos)  # every call of both recorded steps
    for step in (1, 2):
        ours = [e for e in slices if e["args"]["step"] == step]
        assert [e["args"]["label"] for e in ours] == [info.label for info in profile.infos]
        assert all(tracks[e["tid"]] == e["cat"] for e in ours)
        starts = [e["ts"] for e in ours]
        assert starts == sorted(starts) and all(e["dur"] >= 0 for e in ours)
    conv = next(e for e in slices if e["args"]["label"] == "conv_b forward")
    assert conv["name"] == "conv_b" and conv["args"]["layers"] == ["conv_b", "relu_b"]
    assert conv["args"]["primitive"] == "convolution forward"
    assert conv["args"]["flops"] == 2.0 * BATCH * 4 * 4 * 5 * 36
    steps = [e for e in events if e["ph"] == "X" and tracks[e["tid"]] == "steps"]
    assert [e["name"] for e in steps] == ["step 1", "step 2"]


def test_chrome_trace_loads(profiled, tmp_path):
    path = profiled.save_trace(tmp_path / "step.json")
    with open(path) as f:
        check_trace(json.load(f), profiled)


def test_tensorboard_profile_plugin_file(profiled, tmp_path):
    path = profiled.save_tensorboard(tmp_path / "logs", run="run_1")
    expected = tmp_path / "logs" / "plugins" / "profile" / "run_1" / \
        f"{socket.gethostname()}.trace.json.gz"
    assert os.fspath(expected) == path
    with gzip.open(path, "rt") as f:
        check_trace(json.load(f), profiled)


def test_chart_png(profiled, tmp_path):
    image = pytest.importorskip("matplotlib.image")
    path = profiled.save_chart(tmp_path / "layers.png")
    pixels = image.imread(path)
    # kiln.plot's layer chart: 800 pixels wide, 120 + 26 per row high, one row per layer
    assert pixels.shape[:2] == (120 + 26 * len(profiled.layer_rows()), 800)
