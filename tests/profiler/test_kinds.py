"""kiln.profiler's kinds of call on a MobileNet-like block whose layer names say nothing of
their class: every call in the kind of the primitive oneDNN runs, depthwise convolutions
apart and rated as memory-bound (GB/s, % of the copy bandwidth), the others as the kinds say;
the per-kind table of the profile's text."""

import pytest
from small_model import PEAKS, small_mobilenet

import kiln.profiler as profiler
from kiln.profiler.kinds import COMPUTE_BOUND, by_kind, rate

# (layer, kind of every call labelled after it)
EXPECTED_KINDS = [
    ("Conv1", {"convolution", "reorder"}),  # the input reordered to the convolution's layout
    ("bn_Conv1", {"batch norm", "sum"}),  # sums: the moving statistics' updates
    ("Conv1_relu", {"eltwise", "sum"}),  # sum: its output's two readers' gradients
    ("block_1_depthwise", {"depthwise convolution"}),
    ("block_1_depthwise_BN", {"batch norm", "sum"}),
    ("block_1_depthwise_relu", {"eltwise"}),
    ("block_1_project", {"convolution", "reorder"}),
    ("block_1_project_BN", {"batch norm", "sum"}),
    ("block_1_add", {"binary"}),
    ("global_average_pooling2d", {"pooling", "reorder"}),
    ("Logits", {"inner product"}),
]
# On AVX2 CPUs oneDNN's forward inner product (brgemm:avx2) wants a blocked weight layout its
# backward-weights kernel (gemm:jit) does not write, so the kernel's gradient is reordered to
# the weights' layout: a "<layer>/kernel gradient to layout" reorder, labelled after the layer
LAYOUT_DEPENDENT = {"Logits": {"reorder"}}


@pytest.fixture(scope="module")
def profiled():
    return profiler.profile(small_mobilenet(), batch_size=2, steps=1, warmup=0, peaks=PEAKS)


def test_every_call_is_in_the_kind_of_its_primitive(profiled):
    rows = profiled.rows()
    for layer, kinds in EXPECTED_KINDS:
        seen = {row["kind"] for row in rows if row["name"] == layer}
        assert kinds <= seen <= kinds | LAYOUT_DEPENDENT.get(layer, set()), layer
    for row in rows:
        if row["name"] in LAYOUT_DEPENDENT and row["kind"] == "reorder":
            assert row["label"] == f"{row['name']}/kernel gradient to layout", row["label"]
    kind_of = {row["label"]: row["kind"] for row in rows}
    assert kind_of["block_1_depthwise forward"] == "depthwise convolution"
    assert kind_of["block_1_depthwise backward data"] == "depthwise convolution"
    assert kind_of["block_1_depthwise backward weights"] == "depthwise convolution"
    assert kind_of["Conv1 backward weights"] == "convolution"
    assert kind_of["bn_Conv1 backward"] == "batch norm"
    assert kind_of["categorical_crossentropy softmax cross-entropy"] == "numba kernel"
    assert kind_of["optimizer update"] == "optimizer"
    # the kinds of the rows are the kinds of the per-kind table, call for call
    totals = {row["kind"]: row["calls"] for row in profiled.kind_rows()}
    counted = {}
    for row in rows:
        counted[row["kind"]] = counted.get(row["kind"], 0) + row["calls"]
    assert totals == counted


def test_depthwise_calls_are_rated_against_the_copy_bandwidth(profiled):
    depthwise = [row for row in profiled.rows() if row["kind"] == "depthwise convolution"]
    assert len(depthwise) == 3
    for row in depthwise:
        assert row["flops"] > 0  # still counted, but not what bounds the call
        assert "gflops" not in row and "pct_peak" not in row
        assert row["gbps"] == pytest.approx(row["bytes"] / row["seconds"] / 1e9)
        assert row["pct_bandwidth"] == pytest.approx(100 * row["gbps"] / PEAKS["copy_gbps"])
    project = next(row for row in profiled.rows() if row["label"] == "block_1_project forward")
    assert project["pct_peak"] == pytest.approx(100 * project["gflops"] / PEAKS["matmul_gflops"])
    table = profiled.table()
    lines = [line for line in table.splitlines() if "block_1_depthwise " in line
             and ("forward" in line or "backward" in line)]
    assert len(lines) == 3
    for line in lines:
        assert " GB/s" in line and line.rstrip().endswith(" bw") and "GFLOP/s" not in line
    kind_line = next(line for line in table.splitlines()
                     if line.startswith("depthwise convolution "))
    assert "GB/s" in kind_line and kind_line.rstrip().endswith(" bw")
    conv_line = next(line for line in table.splitlines() if line.startswith("convolution "))
    assert "GFLOP/s" in conv_line and conv_line.rstrip().endswith(" peak")


def test_per_kind_rates():
    entries = [("convolution", 2, 0.5, 4e9, 10**6), ("convolution", 1, 0.5, 2e9, 10**6),
               ("depthwise convolution", 3, 0.25, 1e9, 2 * 10**9), ("batch norm", 1, 0.1, 0.0, 0),
               ("sum", 1, 0.0, 0.0, 10)]
    rows = {row["kind"]: row for row in by_kind(entries, PEAKS)}
    assert [row["kind"] for row in by_kind(entries, PEAKS)] == [
        "convolution", "depthwise convolution", "batch norm", "sum"]
    assert rows["convolution"]["calls"] == 3 and rows["convolution"]["seconds"] == 1.0
    assert rows["convolution"]["gflops"] == pytest.approx(6.0)
    assert rows["convolution"]["pct_peak"] == pytest.approx(60.0)
    assert rows["depthwise convolution"]["gbps"] == pytest.approx(8.0)
    assert rows["depthwise convolution"]["pct_bandwidth"] == pytest.approx(80.0)
    assert "gflops" not in rows["depthwise convolution"]
    assert rate("batch norm", 0.1, 0.0, 0, PEAKS) == {}  # nothing counted: no rate
    assert rate("sum", 0.0, 0.0, 10, PEAKS) == {}  # no time measured: no rate
    assert "depthwise convolution" not in COMPUTE_BOUND

