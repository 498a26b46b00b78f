"""The benchmark harness runs end to end (plumbing, not speed: speed lives in its output)."""

import json
import re
import subprocess
import sys

import pytest

from kiln.bench import harness
from kiln.bench.models import MODELS, inference_flops, training_flops
from kiln.bench.peers import installed


@pytest.mark.parametrize("name, train_gflop, infer_gflop",
                         [("mnist_cnn", 9.160, 3.070), ("cifar10_cnn", 3.926, 1.327)])
def test_model_flop_counts(name, train_gflop, infer_gflop):
    for data_format in ("channels_last", "channels_first"):
        model, _, batch = MODELS[name](data_format)
        model.build()
        assert training_flops(model, batch) / 1e9 == pytest.approx(train_gflop, abs=5e-4)
        assert inference_flops(model, batch) / 1e9 == pytest.approx(infer_gflop, abs=5e-4)


def test_train_command_last_line():
    result = subprocess.run(
        [sys.executable, "-m", "kiln.bench", "train", "--model", "mnist_cnn", "--steps", "2",
         "--warmup", "1"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    match = re.fullmatch(r"ms_per_step=(\d+\.\d+) pct_of_peak=(\d+\.\d+)", last)
    assert match and float(match.group(1)) > 0 and float(match.group(2)) > 0


def test_compare_writes_json_and_reports_missing_peers(tmp_path):
    out = tmp_path / "run.json"
    result = subprocess.run(
        [sys.executable, "-m", "kiln.bench", "compare", "--frameworks", "kiln", "torch",
         "--models", "cifar10_cnn", "--modes", "train", "infer", "--formats", "channels_first",
         "--repeats", "2", "--steps", "2", "--warmup", "0", "--json", str(out),
         "--log", str(tmp_path / "workers.log")],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    kiln_rows = [r for r in report["results"] if r["framework"] == "kiln"]
    assert {r["mode"] for r in kiln_rows} == {"train", "infer"}
    for row in kiln_rows:
        assert row["samples"] == 4 and len(row["repeat_medians_ms"]) == 2
        assert 0 < row["best_ms"] <= row["median_ms"]
        assert row["gflops"] > 0 and row["pct_f32_peak"] > 0
    assert report["peaks_gflops"]["f32"] > 0
    assert report["kiln"]["cifar10_cnn seconds to first fit step"] > 0
    profile = report["kiln"]["cifar10_cnn train f32 profile"]
    assert "optimizer update" in profile["calls_ms"]
    breakdown = harness.layer_breakdown(profile["calls_ms"])
    assert any(k.startswith("conv2d") and v.get("forward", 0) > 0 for k, v in breakdown.items())
    assert any(k.startswith("dense") and v.get("backward", 0) > 0 for k, v in breakdown.items())
    assert profile["fit_step_ms"] > 0 and profile["fit_plan_step_ms"] > 0
    assert "over plan steps run alternately" in harness.step_efficiency(profile)
    text = harness.markdown(report)
    assert "| cifar10_cnn | train | channels_first | f32 | kiln |" in text
    assert "| optimizer update |" in text
    if installed("torch") is not None:
        assert "not installed" in report["frameworks"]["torch"]
        assert "torch: not installed" in result.stdout


def test_installed_names_the_missing_module(monkeypatch):
    monkeypatch.setitem(harness.FRAMEWORKS, "nothing", ("nowhere", None))
    from kiln.bench import peers
    monkeypatch.setitem(peers.REQUIRED_MODULES, "nothing", ["no_such_module_kiln"])
    assert "no_such_module_kiln" in installed("nothing")


def test_kiln_command_usage(capsys):
    from kiln.cli import main
    assert main([]) == 2
    assert "kiln bench" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--help"], ["compare", "--help"], ["train", "--help"],
                                  ["profile", "--help"], ["report", "--help"]])
def test_help_of_every_command(argv, capsys):
    from kiln.bench.__main__ import main
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert "usage: python -m kiln.bench" in capsys.readouterr().out
