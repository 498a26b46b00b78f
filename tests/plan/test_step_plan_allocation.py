"""A compiled step allocates nothing: every buffer was allocated when the plan was built."""

import tracemalloc

import pytest

from kiln.bench.peers import kiln_runner


@pytest.mark.parametrize("mode", ["train", "infer"])
def test_steps_allocate_no_buffers(mode):
    step = kiln_runner.prepare("cifar10_cnn", "channels_last", mode, "f32")
    for _ in range(3):  # first calls may load kernels
        step()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for _ in range(10):
            step()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Even the smallest array of this model (the 32 x 10 output, 1.3 KB) allocated per step
    # would show here; the few hundred bytes of transient Python objects of a call do not.
    assert current - base <= 512
    assert peak - base < 1024
