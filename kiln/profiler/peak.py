"""The machine's practical peaks, measured in the same run as the model steps so that
percentages compare like with like: f32 sgemm and bf16 matmul through oneDNN (for the
multiply-add calls), and the copy bandwidth of a oneDNN reorder (for memory-bound calls)."""

import ctypes
import time

import numpy as np

from ..binding import constants as dnnl
from ..binding.engine import cpu_engine
from ..binding.errors import check
from ..binding.library import lib
from ..binding.memory import Memory, MemoryDesc
from ..binding.primitive import BoundCall, Primitive, PrimitiveDesc, default_attributes


def _best_seconds(run, repeats):
    """The fastest of `repeats` runs after a warm-up: a peak is what the machine can do, and
    on a shared machine noise only ever slows a run down (step times use medians instead)."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return float(np.min(times))


def sgemm_gflops(size=2048, repeats=10):
    """Best GFLOP/s of oneDNN's sgemm on square `size` matrices (after one warm-up)."""
    a = np.random.default_rng(0).random((size, size), dtype=np.float32)
    b = np.random.default_rng(1).random((size, size), dtype=np.float32)
    c = np.zeros((size, size), dtype=np.float32)

    def run():
        check(lib.dnnl_sgemm(b"N", b"N", size, size, size, 1.0, ctypes.c_void_p(a.ctypes.data),
                             size, ctypes.c_void_p(b.ctypes.data), size, 0.0,
                             ctypes.c_void_p(c.ctypes.data), size), "sgemm", f"{size}^3")

    return 2.0 * size ** 3 / _best_seconds(run, repeats) / 1e9


def bf16_matmul_gflops(size=2048, repeats=10):
    """Best GFLOP/s of a oneDNN bf16 matmul (bf16 in, f32 out); None without bf16 support."""
    dims = (size, size)
    a_desc = MemoryDesc.with_tag(dims, dnnl.bf16)
    b_desc = MemoryDesc.with_tag(dims, dnnl.bf16)
    c_desc = MemoryDesc.with_tag(dims, dnnl.f32)
    try:
        pd = PrimitiveDesc("dnnl_matmul_primitive_desc_create", "matmul", f"bf16 {size}^3",
                           a_desc.handle, b_desc.handle, None, c_desc.handle,
                           default_attributes().handle)
    except Exception:
        return None
    if "ref" in pd.implementation:
        return None  # a reference kernel says the CPU has no bf16 instructions
    primitive = Primitive(pd)
    a, b, c = Memory(a_desc), Memory(b_desc), Memory(c_desc)
    rng = np.random.default_rng(0)
    for memory in (a, b):  # bf16 = the high half of an f32
        values = rng.random(size * size, dtype=np.float32).view(np.uint32) >> 16
        memory.as_array(np.uint16)[:] = values.astype(np.uint16)
    args = {dnnl.ARG_SRC: a, dnnl.ARG_WEIGHTS: b, dnnl.ARG_DST: c}
    if primitive.scratchpad_desc is not None:
        args[dnnl.ARG_SCRATCHPAD] = Memory(primitive.scratchpad_desc)
    call = BoundCall(primitive, args, "bf16 matmul peak")
    return 2.0 * size ** 3 / _best_seconds(call.run, repeats) / 1e9


def copy_gbps(megabytes=32, repeats=10):
    """Best GB/s (bytes read + bytes written) of a oneDNN reorder copying `megabytes` of f32
    between two plain buffers on all threads: what a memory-bound call can hope for."""
    count = megabytes * 2**20 // 4
    desc = MemoryDesc.with_tag((count // 1024, 1024), dnnl.f32)
    pd = PrimitiveDesc("dnnl_reorder_primitive_desc_create", "reorder", f"copy {count}",
                       desc.handle, cpu_engine(), desc.handle, cpu_engine(),
                       default_attributes().handle, engine_first=False)
    primitive = Primitive(pd)
    source, target = Memory(desc), Memory(desc)
    source.as_array(np.float32)[:] = 1.0
    args = {dnnl.ARG_FROM: source, dnnl.ARG_TO: target}
    if primitive.scratchpad_desc is not None:
        args[dnnl.ARG_SCRATCHPAD] = Memory(primitive.scratchpad_desc)
    call = BoundCall(primitive, args, "copy bandwidth")
    return 2.0 * desc.size / _best_seconds(call.run, repeats) / 1e9
