"""`kiln bench profile`'s grouping: a plan's calls by kind of call, whatever the layers are
called (a MobileNet-like block named as MobileNetV2 names its layers), each kind rated against
the same-run peak that bounds it, then the plan's buffer bytes."""

import pytest

from kiln import keras
from kiln.bench import profile_report
from kiln.keras import layers

PEAKS = {"matmul_gflops": 10.0, "copy_gbps": 10.0}


def mobilenet_block():
    inputs = keras.Input((6, 6, 4), name="input")
    x = layers.DepthwiseConv2D(3, padding="same", use_bias=False,
                               name="block_3_depthwise")(inputs)
    x = layers.BatchNormalization(name="block_3_depthwise_BN")(x)
    x = layers.ReLU(6.0, name="block_3_depthwise_relu")(x)
    x = layers.Conv2D(4, 1, use_bias=False, name="block_3_project")(x)
    x = layers.Add(name="block_3_add")([inputs, x])
    x = layers.Flatten(name="flat")(x)
    outputs = layers.Dense(2, activation="softmax", name="Logits")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    plan = model._plan(True, 2)
    plan.train_step()
    return plan


@pytest.fixture(scope="module")
def plan_and_profile():
    plan = mobilenet_block()
    return plan, plan.profile(2)


def test_each_call_lands_in_its_kind(plan_and_profile):
    plan, seconds = plan_and_profile
    entries = profile_report.label_entries(plan, seconds)
    assert len(entries) == len(seconds) - 1  # every label but "outside calls"
    kind_of = dict(zip((label for label in seconds if label != "outside calls"),
                       (entry[0] for entry in entries), strict=True))
    assert kind_of["block_3_depthwise forward"] == "depthwise convolution"
    assert kind_of["block_3_depthwise backward weights"] == "depthwise convolution"
    assert kind_of["block_3_depthwise_BN forward"] == "batch norm"
    assert kind_of["block_3_depthwise_BN backward"] == "batch norm"
    assert kind_of["block_3_depthwise_relu relu(max_value=6.0)"] == "eltwise"
    assert kind_of["block_3_project forward"] == "convolution"
    assert kind_of["block_3_add forward"] == "binary"
    assert kind_of["Logits forward"] == "inner product"
    assert kind_of["optimizer update"] == "optimizer"
    rows = {row["kind"]: row for row in profile_report.grouped(plan, seconds, PEAKS)}
    assert {"depthwise convolution", "batch norm", "eltwise", "convolution", "binary",
            "inner product", "optimizer"} <= set(rows)
    assert "other" not in rows
    depthwise = rows["depthwise convolution"]
    assert depthwise["calls"] == 2  # forward, backward weights: the input needs no gradient
    assert "gflops" not in depthwise
    assert depthwise["pct_bandwidth"] == pytest.approx(100 * depthwise["gbps"] / 10.0)
    for kind in ("batch norm", "eltwise", "binary"):
        assert "gbps" in rows[kind] and "gflops" not in rows[kind], kind
    assert rows["convolution"]["pct_peak"] == pytest.approx(
        100 * rows["convolution"]["gflops"] / 10.0)


def test_the_lines_show_rates_and_planned_bytes(plan_and_profile):
    plan, seconds = plan_and_profile
    lines = profile_report.lines(plan, seconds, 1.0, PEAKS)
    depthwise = next(line for line in lines if line.startswith("  depthwise convolution "))
    assert "GB/s" in depthwise and depthwise.rstrip().endswith(" bw")
    conv = next(line for line in lines if line.startswith("  convolution "))
    assert "GFLOP/s" in conv and conv.rstrip().endswith(" peak")
    planned = plan.planned_bytes
    assert lines[-1] == (f"  planned buffers {planned['buffers'] / 2**20:.1f} MiB (without "
                         f"reuse by liveness {planned['buffers_without_reuse'] / 2**20:.1f} "
                         f"MiB; scratchpad {planned['scratchpad'] / 2**20:.2f} MiB)")

