"""The scaling model of `kiln bench scaling`: the ring allreduce cost and the batch at which
a model stops scaling, from given measurements (no timing here)."""

import pytest

from kiln.bench.scaling import ring_allreduce_seconds, scaling_model


def test_ring_allreduce_cost():
    # 2 (p - 1) / p of the bytes over the link, plus 2 (p - 1) latency-bound steps
    assert ring_allreduce_seconds(1e9, 2, 8, latency_s=0) == pytest.approx(1.0)
    assert ring_allreduce_seconds(1e9, 4, 8, latency_s=1e-3) == pytest.approx(1.5 + 6e-3)
    assert ring_allreduce_seconds(1e9, 1, 8) == 0.0


def test_stops_scaling_where_the_allreduce_takes_as_long_as_the_compute():
    rows = [{"model": "m", "ranks": 1, "step_ms": 128.0, "global_batch": 128},
            {"model": "m", "ranks": 2, "step_ms": 300.0, "global_batch": 128,
             "allreduce_ms_per_step": 10.0, "gradient_mb": 10.0}]
    lines = scaling_model(rows, nodes=(8,), links=(10,))
    assert len(lines) == 3
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    reduce_ms = ring_allreduce_seconds(10e6, 8, 10) * 1e3
    assert cells[:5] == ["m", "10.00", "8", "10", f"{reduce_ms:.2f}"]
    # 1 ms of compute per image (the faster run): half efficiency at reduce_ms images per node
    assert cells[6] == f"{reduce_ms:.1f} / {reduce_ms * 8:.0f}"
    assert cells[5] == f"{100 * 128 / (128 + reduce_ms):.1f}%"
