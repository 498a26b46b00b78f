"""`kiln bench ops`: the table and JSON rows of a run (timings faked: no workers), and what the
kiln runner plans for the case (one forward call; backward: only the bias gradient's sum, the
input gradient being the output gradient buffer itself)."""

from kiln.bench import ops
from kiln.bench.peers import ops_kiln, ops_shapes


def fake_report():
    rows = []
    for data_format in ops.FORMATS:
        for direction in ops_shapes.DIRECTIONS:
            for name, ms in (("kiln", 2.0), ("torch", 4.0)):
                gbps = ops.bytes_moved(direction) / ms / 1e6
                rows.append({"framework": name, "format": data_format, "direction": direction,
                             "median_ms": ms, "gbps": gbps, "pct_of_copy": 100 * gbps / 20})
            rows.append({"framework": "jax", "format": data_format, "direction": direction,
                         "note": "not installed (jax)"})
    plan = {"forward": ["bias forward"], "backward": ["bias sum"], "input_gradient": "dy"}
    return {"case": "broadcast_add", "copy_gbps": 20.0, "rows": rows,
            "kiln_plan": {f: plan for f in ops.FORMATS}}


def test_table_has_bandwidth_and_speed_against_the_fastest_peer():
    table = ops.format_table(fake_report())
    kiln_forward = next(line for line in table.splitlines()
                        if " forward " in line and " kiln " in line)
    # 2 x 18.9 MB in 2 ms = 18.9 GB/s = 94% of 20 GB/s, twice as fast as torch's 4 ms
    assert kiln_forward.split()[-4:] == ["2.00", "18.9", "94", "2.00x"]
    assert "skipped: not installed (jax)" in table


def test_kiln_runner_plans_one_forward_call_and_no_input_gradient_copy():
    plan = ops_kiln.describe("channels_last")
    assert len(plan["forward"]) == 1 and "forward" in plan["forward"][0]
    assert len(plan["backward"]) == 1 and "sum over broadcast axes" in plan["backward"][0]
    assert plan["input_gradient"].startswith("the output gradient buffer itself")
