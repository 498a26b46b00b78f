"""kiln.profiler.profile on a small conv model: every layer in the table with its forward and
backward calls, FLOPs as the geometry says, positive times that add up to the step, and a
profiled model trained exactly as an unprofiled one."""

import numpy as np
import pytest
from small_model import BATCH, PEAKS, data, small_model

import kiln.profiler as profiler
from kiln import keras
from kiln.bench.models import forward_flops_per_layer
from kiln.profiler.calls import fused_members
from kiln.profiler.table import planned_bytes_line


@pytest.fixture(scope="module")
def profiled():
    model = small_model()
    x, y = data()
    return profiler.profile(model, x, y, batch_size=BATCH, steps=2, warmup=1, peaks=PEAKS)


def test_every_layer_has_forward_and_backward_calls(profiled):
    rows = profiled.rows()
    for layer in ("conv_a", "conv_b", "relu_b", "pool", "out"):
        phases = {row["phase"] for row in rows if layer in row["layers"]}
        assert phases == {"forward", "backward"}, layer
    # the relu layer runs inside conv_b's primitive: the fused call names both layers
    forward = next(row for row in rows if row["label"] == "conv_b forward")
    assert forward["layers"] == ("conv_b", "relu_b")
    assert forward["primitive"] == "convolution forward" and forward["implementation"]
    names = [name for name, _, _ in profiled.layer_rows()]
    assert names[:4] == ["conv_a", "conv_b+relu_b", "pool", "flat"]
    assert "out" in names and any(name.endswith("(loss)") for name in names)
    table = profiled.table()
    for layer in ("conv_a", "conv_b+relu_b", "pool", "flat", "out"):
        assert layer in table
    assert {row["phase"] for row in rows} == {"forward", "backward", "update"}


def test_conv_flops_are_the_analytic_count(profiled):
    # conv_b: 4 images, 4x4 outputs of 5 channels, each summing 3x3x4 products
    expected = 2.0 * BATCH * 4 * 4 * 5 * (3 * 3 * 4)
    flops = {row["label"]: row["flops"] for row in profiled.rows()}
    assert flops["conv_b forward"] == expected
    assert flops["conv_b backward data"] == expected
    assert flops["conv_b backward weights"] == expected
    assert flops["out forward"] == 2.0 * BATCH * 2 * 2 * 5 * 3
    assert flops["conv_b forward"] == forward_flops_per_layer(profiled.model, BATCH)[1]
    assert flops["pool forward"] == 0.0


def test_rates_and_bytes(profiled):
    rows = {row["label"]: row for row in profiled.rows()}
    conv = rows["conv_b forward"]
    # source 4x6x6x4, weights 5x4x3x3, bias 5, destination 4x4x4x5 floats at least
    assert conv["bytes"] >= 4 * (4 * 6 * 6 * 4 + 5 * 4 * 3 * 3 + 5 + 4 * 4 * 4 * 5)
    assert conv["gflops"] == pytest.approx(conv["flops"] / conv["seconds"] / 1e9)
    assert conv["pct_peak"] == pytest.approx(100 * conv["gflops"] / PEAKS["matmul_gflops"])
    pool = rows["pool forward"]
    assert "gflops" not in pool
    assert pool["pct_bandwidth"] == pytest.approx(100 * pool["gbps"] / PEAKS["copy_gbps"])


def test_times_are_positive_and_add_up_to_the_step(profiled):
    assert all(row["seconds"] > 0 for row in profiled.rows())
    summary = profiled.summary()
    # the calls are the step: what is left is Python around them (the machine is shared and
    # loaded, so the bound is loose)
    assert summary["calls_seconds"] <= summary["recorded_step_seconds"]
    assert summary["calls_seconds"] >= 0.5 * summary["recorded_step_seconds"]
    assert summary["plain_step_seconds"] > 0 and summary["steps"] == 2
    assert "profiler overhead:" in profiled.table()


def test_the_footer_gives_the_planned_bytes(profiled):
    planned = profiled.plan.planned_bytes
    assert profiled.planned_bytes == planned
    assert 0 < planned["scratchpad"] <= planned["buffers"] <= planned["buffers_without_reuse"]
    expected = (f"planned buffers {planned['buffers'] / 2**20:.1f} MiB (without reuse by "
                f"liveness {planned['buffers_without_reuse'] / 2**20:.1f} MiB; scratchpad "
                f"{planned['scratchpad'] / 2**20:.2f} MiB)")
    assert profiled.table().splitlines()[-1] == expected
    line = planned_bytes_line({"buffers": 3 * 2**20, "buffers_without_reuse": 5.5 * 2**20,
                               "scratchpad": 2**18})
    assert line == ("planned buffers 3.0 MiB (without reuse by liveness 5.5 MiB; "
                    "scratchpad 0.25 MiB)")


def test_profile_trains_the_model_as_plain_steps_do():
    x, y = data()
    reference = small_model()
    weights = reference.get_weights()
    twin = small_model(weights)
    profiler.profile(twin, x, y, batch_size=BATCH, steps=1, warmup=1, peaks=PEAKS)
    for _ in range(1 + 2 * 1):
        reference.train_on_batch(x, y)
    for trained, expected, start in zip(twin.get_weights(), reference.get_weights(), weights):
        assert not np.array_equal(expected, start)
        np.testing.assert_allclose(trained, expected, rtol=1e-6, atol=1e-7)


def test_bad_arguments_are_named():
    model = small_model()
    with pytest.raises(ValueError, match="argument steps must be an integer >= 1, got 0"):
        profiler.profile(model, steps=0)
    with pytest.raises(ValueError, match="argument y is required"):
        profiler.profile(model, data()[0])


def test_an_entry_of_an_absorbed_layer_belongs_to_its_group(profiled):
    members = fused_members(profiled.model.graph, profiled.plan.graph)
    assert members["conv_b"] == members["relu_b"] == ("conv_b", "relu_b")
    # (slice name, layers, phase) come from the entries' fields, not from their labels
    named = {info.label: (info.name, info.layers, info.phase) for info in profiled.infos}
    entries = {entry.label: entry for entry in profiled.plan.entries}
    # planned by conv_b's backward into the forward list: conv_b's, run in the forward
    reorder = entries["conv_b/kernel to layout"]
    assert (reorder.owner, reorder.layer, reorder.phase) == ("conv_b", "conv_b", "forward")
    assert named["conv_b/kernel to layout"] == ("conv_b", ("conv_b", "relu_b"), "forward")
    loss = entries["categorical_crossentropy softmax cross-entropy"]
    assert (loss.owner, loss.layer, loss.phase) == ("categorical_crossentropy", None, "loss")
    assert named[loss.label] == ("categorical_crossentropy", (), "forward")
    update = entries["optimizer update"]
    assert (update.owner, update.phase, update.call) == ("optimizer", "update", None)


def test_without_data_a_random_batch_is_profiled():
    model = small_model()
    profile = profiler.profile(model, batch_size=2, steps=1, warmup=0, peaks=PEAKS)
    assert profile.batch_size == 2 and profile.summary()["steps"] == 1
    assert np.isfinite(profile.plan.stats[0])  # a real loss on the random inputs
    with pytest.raises(RuntimeError, match="must be compiled"):
        profiler.profile(keras.Sequential([keras.layers.Dense(2, input_shape=(3,))]))


def test_flops_of_depthwise_grouped_and_transposed_convolutions():
    model = keras.Sequential([
        keras.layers.DepthwiseConv2D(3, input_shape=(6, 6, 4), name="depthwise"),
        keras.layers.Conv2D(2, 3, groups=2, name="grouped"),
        keras.layers.Conv2DTranspose(3, 2, strides=2, name="transposed"),
        keras.layers.Flatten(), keras.layers.Dense(2, name="dense")])
    model.compile(optimizer="sgd", loss="mse")
    flops = {row["label"]: row["flops"]
             for row in profiler.profile(model, batch_size=2, steps=1, warmup=0,
                                         peaks=PEAKS).rows()}
    expected = {"depthwise": 2 * (2 * 4 * 4 * 4) * 9,       # one 3x3 filter per channel
                "grouped": 2 * (2 * 2 * 2 * 2) * (2 * 9),   # 2 of the 4 channels per group
                "transposed": 2 * (2 * 2 * 2 * 2) * (3 * 4),  # each input pixel to 3x2x2
                "dense": 2 * 2 * 48 * 2}
    for layer, count in expected.items():
        assert flops[f"{layer} forward"] == count
        assert flops[f"{layer} backward weights"] == count
