"""The benchmark harness runs end to end (plumbing, not speed: speed lives in its output)."""

import importlib.util
import json
import os
import re
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from kiln import keras
from kiln.bench import harness, models, worker
from kiln.bench.models import built, forward_flops_per_layer, inference_flops, training_flops
from kiln.bench.peers import (
    FRAMEWORKS,
    REQUIRED_MODULES,
    Framework,
    installed,
    kiln_runner,
    synthetic,
)

FLOPS = [("mnist_cnn", 9.160, 3.070), ("cifar10_cnn", 3.926, 1.327),
         ("resnet20", 31.231, 10.448),
         # LSTM 2 * 32 * 80 * (128 + 128) * 512 forward, all three passes (an Embedding is
         # before it, so backward-data counts); GRU three gates; Conv1D per output step
         ("imdb_lstm", 2.013, 0.671), ("imdb_gru", 1.510, 0.503), ("imdb_cnn", 2.878, 0.959)]


@pytest.mark.parametrize("name, train_gflop, infer_gflop", FLOPS)
def test_model_flop_counts(name, train_gflop, infer_gflop):
    if name == "resnet20" and not hasattr(keras.layers, "BatchNormalization"):
        pytest.skip("kiln.keras has no BatchNormalization / functional Model yet")
    for data_format in ("channels_last", "channels_first"):
        model, batch = built(name, data_format)
        assert training_flops(model, batch) / 1e9 == pytest.approx(train_gflop, abs=5e-4)
        assert inference_flops(model, batch) / 1e9 == pytest.approx(infer_gflop, abs=5e-4)


def test_flops_of_functional_layers():
    """Layers without output_shape (Keras 3, kiln's functional API) count by output.shape,
    in each conv's own data_format; layers without a kernel are skipped."""
    def conv(shape, kernel, data_format):
        return SimpleNamespace(kernel=SimpleNamespace(shape=kernel), data_format=data_format,
                               output=SimpleNamespace(shape=shape))

    model = SimpleNamespace(layers=[
        SimpleNamespace(name="input_layer"),
        conv((None, 16, 16, 8), (3, 3, 4, 8), "channels_last"),
        conv((None, 8, 16, 16), (1, 1, 8, 8), "channels_first"),
        SimpleNamespace(kernel=None),
        SimpleNamespace(kernel=SimpleNamespace(shape=(8, 10)), output_shape=None,
                        output=SimpleNamespace(shape=(None, 10)))])
    assert forward_flops_per_layer(model, 2) == [2.0 * 2 * 288 * 256, 2.0 * 2 * 64 * 256,
                                                 2.0 * 2 * 80]
    assert training_flops(model, 2) == pytest.approx(
        2 * 2.0 * 2 * 288 * 256 + 3 * (2.0 * 2 * 64 * 256 + 2.0 * 2 * 80))


@pytest.mark.skipif(importlib.util.find_spec("jax") is None
                    or importlib.util.find_spec("keras") is None, reason="needs keras + jax")
def test_keras3_resnet20_is_resnet20_v1_and_counts_like_kiln():
    """The Keras 3 peer's resnet20 (JAX backend, in its own process) has ResNet20 v1's
    274,442 parameters and the GFLOP count of kiln's copy."""
    script = ("import json, keras\n"
              "from kiln.bench.models import inference_flops, training_flops\n"
              "from kiln.bench.peers import keras3_runner\n"
              "out = {}\n"
              "for f in ('channels_last', 'channels_first'):\n"
              "    m = keras3_runner._model(keras, 'resnet20', f)\n"
              "    out[f] = [m.count_params(), training_flops(m, 128) / 1e9,\n"
              "              inference_flops(m, 128) / 1e9, list(m.output.shape)]\n"
              "print(json.dumps(out))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    for params, train, infer, shape in counts.values():
        assert params == 274442 and shape == [None, 10]
        assert train == pytest.approx(31.231, abs=5e-4)
        assert infer == pytest.approx(10.448, abs=5e-4)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None
                    or importlib.util.find_spec("keras") is None, reason="needs keras + jax")
def test_keras3_text_models_count_like_kiln():
    """The Keras 3 peer's sequence models (JAX backend, own process) have kiln's parameter
    counts and GFLOP counts, and one training step runs on the shared synthetic batch."""
    script = ("import json, keras\n"
              "from kiln.bench.models import inference_flops, training_flops\n"
              "from kiln.bench.peers import keras3_runner, synthetic\n"
              "out = {}\n"
              "for name in ('imdb_lstm', 'imdb_gru', 'imdb_cnn'):\n"
              "    m = keras3_runner._model(keras, name, 'channels_last')\n"
              "    loss = float(m.train_on_batch(*synthetic.batch(name, 'channels_last'))[0])\n"
              "    out[name] = [m.count_params(), training_flops(m, 32) / 1e9,\n"
              "                 inference_flops(m, 32) / 1e9, loss]\n"
              "print(json.dumps(out))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.strip().splitlines()[-1])
    for name, (params, train, infer, loss) in counts.items():
        model, batch = built(name)
        assert params == model.count_params(), name
        assert train == pytest.approx(training_flops(model, batch) / 1e9, rel=1e-9), name
        assert infer == pytest.approx(inference_flops(model, batch) / 1e9, rel=1e-9), name
        assert 0.5 < loss < 0.9, name  # binary cross-entropy of random labels near log 2


def test_sequence_batch_is_token_ids_and_binary_labels():
    x, y = synthetic.batch("imdb_lstm", "channels_first")
    assert x.dtype == np.int32 and x.shape == (32, 80) and 1 <= x.min() and x.max() < 20000
    assert y.shape == (32, 1) and set(np.unique(y)) == {0.0, 1.0}
    assert synthetic.batch("imdb_cnn", "channels_last")[0].shape == (32, 400)


AGREE = """
import numpy as np, keras, torch
from kiln.bench.peers import keras3_runner, synthetic, torch_runner
keras_net = keras3_runner._model(keras, "resnet20", "channels_first")
torch_net = torch_runner._resnet20(torch).eval()
def creation_order(layer):  # Keras 3 lists layers in graph order, torch in creation order
    base, _, n = layer.name.rpartition("_")
    return (type(layer).__name__, base or layer.name, int(n) if n.isdigit() else 0)
kinds = {torch.nn.Conv2d: 0, torch.nn.BatchNorm2d: 1, torch.nn.Linear: 2}
ours = sorted((m for m in torch_net.modules() if type(m) in kinds), key=lambda m: kinds[type(m)])
theirs = sorted((layer for layer in keras_net.layers if layer.weights), key=lambda layer: (
    {"Conv2D": 0, "BatchNormalization": 1, "Dense": 2}[type(layer).__name__],
    creation_order(layer)))
rng = np.random.default_rng(0)
for layer, module in zip(theirs, ours, strict=True):
    w = [rng.normal(0, (1 / np.prod(v.shape[:-1])) ** 0.5 if len(v.shape) > 1 else 0.1,
                    v.shape).astype("float32") for v in layer.weights]
    if len(w) == 4:
        w[0] += 1; w[3] = abs(w[3]) + 1
    layer.set_weights(w)
    if len(w) == 4:
        tensors = w
    else:
        tensors = [w[0].transpose(3, 2, 0, 1) if w[0].ndim == 4 else w[0].T, w[1]]
    names = ["weight", "bias", "running_mean", "running_var"]
    with torch.no_grad():
        for name, value in zip(names, tensors):
            getattr(module, name).copy_(torch.from_numpy(np.ascontiguousarray(value)))
x = synthetic.batch("resnet20", "channels_first")[0][:8]
with torch.no_grad():
    ours = torch.softmax(torch_net(torch.from_numpy(x)), 1).numpy()
print(float(np.abs(np.asarray(keras_net.predict_on_batch(x)) - ours).max()))
"""


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("torch", "jax", "keras")),
                    reason="needs torch, keras and jax")
def test_torch_and_keras3_resnet20_compute_the_same():
    """Same weights, same outputs: the PyTorch copy has Keras' 'same' padding of strided convs
    (a symmetric padding is off by about 1e-2 here) and Keras' BatchNormalization."""
    result = subprocess.run([sys.executable, "-c", AGREE], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr
    assert float(result.stdout.strip().splitlines()[-1]) < 1e-5


AGREE_NEW = """
import json, sys
import numpy as np, jax, keras, torch
jax.config.update("jax_disable_most_optimizations", True)  # compile time, same arithmetic
from kiln.bench.models import inference_flops, training_flops
from kiln.bench.peers import keras3_runner, synthetic, torch_models
results = {}
for name in ("mobilenet_v2", "unet"):
    keras_net = keras3_runner._model(keras, name, "channels_first")
    torch_net = getattr(torch_models, name)(torch).eval()
    kinds = (torch.nn.Conv2d, torch.nn.BatchNorm2d, torch.nn.Linear)
    ours = [m for m in torch_net.modules() if isinstance(m, kinds)]
    theirs = [layer for layer in keras_net.layers if layer.weights]
    rng = np.random.default_rng(0)
    for layer, module in zip(theirs, ours, strict=True):  # both in forward order
        kind = type(layer).__name__
        w = [rng.normal(0, (1 / np.prod(v.shape[:-1])) ** 0.5 if len(v.shape) > 1 else 0.1,
                        v.shape).astype("float32") for v in layer.weights]
        if kind == "BatchNormalization":
            w[0] += 1; w[3] = abs(w[3]) + 1
            tensors = w
        elif kind in ("Conv2D", "DepthwiseConv2D"):  # (kh, kw, in, out | 1) -> (out | in, ...)
            tensors = [w[0].transpose(3, 2, 0, 1) if kind == "Conv2D"
                       else w[0].transpose(2, 3, 0, 1)] + w[1:]
        else:
            tensors = [w[0].T] + w[1:]
        layer.set_weights(w)
        with torch.no_grad():
            for attribute, value in zip(["weight", "bias", "running_mean", "running_var"],
                                        tensors):
                getattr(module, attribute).copy_(torch.from_numpy(np.ascontiguousarray(value)))
    x = synthetic.batch(name, "channels_first")[0][:2]
    with torch.no_grad():
        logits = torch_net(torch.from_numpy(x))
    probabilities = (torch.sigmoid(logits) if name in synthetic.SEGMENTATION
                     else torch.softmax(logits, 1)).numpy()
    difference = float(np.abs(np.asarray(keras_net.predict_on_batch(x)) - probabilities).max())
    results[name] = [keras_net.count_params(), training_flops(keras_net, 32) / 1e9,
                     inference_flops(keras_net, 32) / 1e9, difference]
reference = keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10)
results["applications"] = reference.count_params()
print(json.dumps(results))
"""


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("torch", "jax", "keras")),
                    reason="needs torch, keras and jax")
def test_mobilenet_v2_and_unet_are_the_same_in_keras_and_torch():
    """The Keras 3 peer's MobileNetV2 has keras.applications.MobileNetV2's parameters; with
    the same weights its PyTorch copy (and the U-Net's) computes the same outputs; GFLOP per
    step at batch 32 as counted on the Keras copy."""
    result = subprocess.run([sys.executable, "-c", AGREE_NEW], capture_output=True, text=True,
                            timeout=600, env={**os.environ, "KERAS_BACKEND": "jax"})
    assert result.returncode == 0, result.stderr
    results = json.loads(result.stdout.strip().splitlines()[-1])
    assert results["mobilenet_v2"][0] == results["applications"] == 2270794
    assert results["unet"][0] == 117985
    assert results["mobilenet_v2"][1:3] == pytest.approx([10.437, 3.521], abs=1e-3)
    assert results["unet"][1:3] == pytest.approx([21.831, 7.290], abs=1e-3)
    assert results["mobilenet_v2"][3] < 1e-5 and results["unet"][3] < 1e-5


def test_segmentation_synthetic_batch():
    for data_format, shape in [("channels_last", (32, 64, 64, 1)),
                               ("channels_first", (32, 1, 64, 64))]:
        x, y = synthetic.batch("unet", data_format)
        assert x.shape == y.shape == shape and set(np.unique(y)) == {0.0, 1.0}
        np.testing.assert_array_equal(y, x > 0.5)


def test_resnet20_synthetic_batch():
    for data_format, shape in [("channels_last", (128, 32, 32, 3)),
                               ("channels_first", (128, 3, 32, 32))]:
        x, y = synthetic.batch("resnet20", data_format)
        assert x.shape == shape and y.shape == (128, 10) and x.dtype == y.dtype == "float32"


def test_frameworks_table():
    assert set(FRAMEWORKS) == set(REQUIRED_MODULES) == {
        "kiln", "keras-tensorflow", "keras-tensorflow-onednn", "keras-jax", "torch",
        "torch-compile"}
    for spec in FRAMEWORKS.values():
        assert importlib.util.find_spec(spec.module) is not None
    assert FRAMEWORKS["torch-compile"].module == FRAMEWORKS["torch"].module
    assert FRAMEWORKS["torch-compile"].options == {"compile": True}
    assert FRAMEWORKS["torch"].options == {}
    assert FRAMEWORKS["keras-tensorflow-onednn"].module == FRAMEWORKS["keras-tensorflow"].module
    assert REQUIRED_MODULES["torch-compile"] == ["torch"]
    assert REQUIRED_MODULES["keras-tensorflow-onednn"] == ["keras", "tensorflow"]


def test_worker_sets_each_frameworks_environment():
    env = {"TF_ENABLE_ONEDNN_OPTS": "1", "KERAS_BACKEND": "jax"}
    worker.configure_environment("keras-tensorflow", env)  # the default: TensorFlow decides
    assert env["KERAS_BACKEND"] == "tensorflow" and "TF_ENABLE_ONEDNN_OPTS" not in env
    worker.configure_environment("keras-tensorflow-onednn", env)
    assert env["KERAS_BACKEND"] == "tensorflow" and env["TF_ENABLE_ONEDNN_OPTS"] == "1"
    env = {}
    worker.configure_environment("keras-jax", env)
    assert env["KERAS_BACKEND"] == "jax" and env["TF_CPP_MIN_LOG_LEVEL"] == "2"
    env = {}
    worker.configure_environment("torch-compile", env)
    assert "KERAS_BACKEND" not in env


def test_worker_error_summary_drops_embedded_tracebacks():
    message = "Graph execution error:\n\n" + "  File x, line 1\n\n" * 30 + (
        "The Conv2D op only supports NHWC.\n\t [[{{node conv}}]]")
    summary = worker.error_summary(RuntimeError(message))
    assert summary == ("RuntimeError: Graph execution error: ... The Conv2D op only supports "
                       "NHWC. [[{{node conv}}]]")
    assert worker.error_summary(ValueError("short")) == "ValueError: short"
    assert len(worker.error_summary(ValueError("x" * 1000))) == 400


def _times(ms):
    return [[ms, ms + 1.0, ms + 2.0]]


def test_best_peer_is_the_fastest_of_every_variant(tmp_path, monkeypatch):
    def cannot_build(data_format):
        raise AttributeError("no BatchNormalization")

    monkeypatch.setitem(models.MODELS, "not_yet", cannot_build)
    config = ("mnist_cnn", "train", "channels_last", "f32")
    samples = {("kiln", *config): _times(30.0), ("torch", *config): _times(90.0),
               ("torch-compile", *config): _times(60.0),
               ("keras-tensorflow", *config): [[50.0, 70.0, 70.0, 70.0]],
               ("keras-tensorflow-onednn", *config): _times(65.0),
               ("torch", "not_yet", "infer", "channels_first", "f32"): _times(8.0),
               ("torch-compile", "not_yet", "infer", "channels_first", "f32"): _times(6.0)}
    report = harness.build_report(samples, {}, {}, {"f32": 300.0, "bf16": None},
                                  {"f32": 300.0, "bf16": None}, {"f32": 290.0, "bf16": None},
                                  {}, str(tmp_path / "run.json"), {})
    mnist, not_yet = sorted(report["best_peers"], key=lambda e: e["model"])
    assert mnist["framework"] == "torch-compile" and mnist["median_ms"] == 61.0
    assert mnist["fastest_step_framework"] == "keras-tensorflow"
    assert mnist["fastest_step_ms"] == 50.0
    assert mnist["kiln_over_best_peer_median"] == pytest.approx(31.0 / 61.0)
    assert mnist["kiln_over_fastest_peer_step"] == pytest.approx(31.0 / 50.0)
    assert not_yet["framework"] == "torch-compile" and not_yet["kiln_median_ms"] is None
    assert json.loads((tmp_path / "run.json").read_text())["best_peers"] == report["best_peers"]
    rows = {(r["framework"], r["model"]): r for r in report["results"]}
    assert rows["kiln", "mnist_cnn"]["gflops"] == pytest.approx(9.160 / 0.031, rel=1e-3)
    assert rows["torch", "not_yet"]["gflops"] is None
    assert "kiln can not build it" in report["notes"]["not_yet GFLOP count"]
    table = harness.format_table(report)
    assert "best peer mnist_cnn train channels_last f32: torch-compile median 61.0 ms" in table
    assert "fastest step keras-tensorflow 50.0 ms; kiln 31.0 ms = 0.51x / 0.62x" in table
    assert "keras-tensorflow-onednn" in table and " n/a " in table
    text = harness.markdown(report)
    assert "| mnist_cnn | train | channels_last | f32 | torch-compile | 61.0 |" in text
    assert ("| not_yet | infer | channels_first | f32 | torch-compile | 7.0 | 6.0 | 6.2-7.8 "
            "|  |  | n/a | n/a |") in text
    assert ("| not_yet | infer | channels_first | f32 | torch-compile | 7.0 | torch-compile "
            "| 6.0 |  |  |  |") in text


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
         "--log", str(tmp_path / "not-yet-made" / "workers.log")],  # as on a fresh checkout
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
    # fit() at two epoch lengths: the slope per step and the intercept per call
    assert profile["fit_steps"] == [2, 6]
    short, long = profile["fit_epoch_ms"]
    assert profile["fit_step_ms"] == pytest.approx(short / 2)
    assert profile["fit_slope_ms"] == pytest.approx((long - short) / 4)
    assert profile["fit_fixed_ms"] + 2 * profile["fit_slope_ms"] == pytest.approx(short)
    line = harness.step_efficiency(profile)
    assert "a step inside fit()" in line and "over plan steps run alternately" in line
    assert "ms per fit() call" in line and "a whole 2-step fit()" in line
    text = harness.markdown(report)
    assert "| cifar10_cnn | train | channels_first | f32 | kiln |" in text
    assert "| optimizer update |" in text
    if installed("torch") is not None:
        assert "not installed" in report["frameworks"]["torch"]
        assert "torch: not installed" in result.stdout


def test_compare_times_a_sequence_model_once_whatever_the_formats(tmp_path):
    out = tmp_path / "run.json"
    result = subprocess.run(
        [sys.executable, "-m", "kiln.bench", "compare", "--frameworks", "kiln",
         "--models", "imdb_gru", "--modes", "train", "--formats", "channels_first",
         "channels_last", "--repeats", "1", "--steps", "1", "--warmup", "0",
         "--json", str(out), "--log", str(tmp_path / "workers.log")],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["results"]
    assert [(r["model"], r["format"]) for r in rows] == [("imdb_gru", "channels_first")]
    assert rows[0]["gflops"] > 0


def test_fit_cost_text_splits_the_step_from_the_call_and_reads_old_runs():
    detail = {"fit_step_ms": 22.0, "fit_plan_step_ms": 20.0, "fit_slope_ms": 20.5,
              "fit_fixed_ms": 18.0, "fit_epoch_ms": [264.0, 756.0], "fit_steps": [12, 36]}
    assert harness.fit_cost_text(detail) == (
        "a step inside fit() 20.50 ms, +2.5% over plan steps run alternately with it "
        "(20.00 ms; batch feeding, labels, metrics, callbacks), plus 18.0 ms per fit() call "
        "(7.5% of 12 plan steps); a whole 12-step fit() 22.00 ms per step (+10.0%)")
    old_run = {"fit_step_ms": 22.0, "fit_plan_step_ms": 20.0}  # JSON from before the slope
    assert harness.fit_cost_text(old_run) == (
        "a fit() step 22.0 ms, +10.0% over plan steps run alternately with it (20.0 ms; "
        "batch feeding, callbacks)")


def test_fit_cost_text_adds_fits_own_work_and_the_clock():
    detail = {"fit_step_ms": 22.0, "fit_plan_step_ms": 20.0, "fit_slope_ms": 20.5,
              "fit_fixed_ms": 18.0, "fit_epoch_ms": [264.0, 756.0], "fit_steps": [12, 36],
              "fit_own_slope_ms": 0.05, "fit_own_fixed_ms": 1.5, "fit_clock": "cpu"}
    assert harness.fit_cost_text(detail).endswith(
        "(+10.0%); fit()'s own work with a no-op step 50 us per step (0.25% of a plan step) "
        "and 1.5 ms per call (cpu time)")


def test_profile_command_reports_the_fit_cost():
    result = subprocess.run(
        [sys.executable, "-m", "kiln.bench", "profile", "--model", "mnist_cnn", "--steps", "1",
         "--warmup", "0", "--fit-steps", "1", "--fit-rounds", "1", "--fit-clock", "cpu"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("fit() on arrays, epochs of 1 and 3 steps alternated with plan "
                           "steps, medians of 1: a step inside fit() ")
    assert "ms per fit() call" in last
    assert "fit()'s own work with a no-op step" in last and last.endswith("(cpu time)")


def test_kiln_profile_reports_the_planned_bytes():
    result = kiln_runner.profile("mnist_cnn", "channels_last", "infer", "f32", 1)
    step = kiln_runner.prepare("mnist_cnn", "channels_last", "infer", "f32")
    assert result["planned_bytes"] == step.__self__.planned_bytes
    assert result["planned_bytes"]["buffers"] > 0
    mib = result["planned_bytes"]["buffers"] / 2**20
    assert f"; planned buffers {mib:.1f} MiB (without reuse" in harness.step_efficiency(result)


def test_installed_names_the_missing_module(monkeypatch):
    monkeypatch.setitem(harness.FRAMEWORKS, "nothing", Framework("nowhere", {}, {}))
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
