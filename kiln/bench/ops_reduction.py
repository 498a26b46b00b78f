"""The bias gradient's sum, oneDNN's reduction primitive against kiln's numba kernel: the
measurement behind kiln/ops/broadcast_kernels.py's choice, repeated by `kiln bench ops` so a
quiet machine can confirm it. The per-channel sum of the case's 128x64x24x24 float32 gradient
in nhwc, nchw and nChw8c (the blocked layout kiln's convolutions produce on AVX2), timed in
the harness process, medians."""

import time

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..binding.primitive import BoundCall, Primitive, PrimitiveDesc, default_attributes
from ..ops import broadcast_kernels as kernels
from .peers import ops_shapes as case

LAYOUTS = {"nhwc": dnnl.acdb, "nchw": dnnl.abcd, "nChw8c": dnnl.aBcd8b}


def _median_ms(run, repeats):
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def compare(repeats=5):
    """[{layout, onednn_impl, onednn_ms, numba_ms, numba_gbps}, ...]; the two sums agree."""
    dims, bias_dims = (case.N, case.C, case.H, case.W), (1, case.C, 1, 1)
    small = MemoryDesc.with_tag(bias_dims, dnnl.f32, dnnl.abcd)
    rows = []
    for name, tag in LAYOUTS.items():
        big = MemoryDesc.with_tag(dims, dnnl.f32, tag)
        grad, target = Memory(big), Memory(small)
        grad.as_array()[:] = np.random.default_rng(0).random(grad.as_array().size,
                                                             dtype=np.float32)
        pd = PrimitiveDesc("dnnl_reduction_primitive_desc_create", "reduction", f"sum {big}",
                           dnnl.reduction_sum, big.handle, small.handle, 0.0, 0.0,
                           default_attributes().handle)
        primitive = Primitive(pd)
        args = {dnnl.ARG_SRC: grad, dnnl.ARG_DST: target}
        if primitive.scratchpad_desc is not None:
            args[dnnl.ARG_SCRATCHPAD] = Memory(primitive.scratchpad_desc)
        call = BoundCall(primitive, args, "bias gradient, oneDNN reduction")
        onednn_ms = _median_ms(call.run, max(1, repeats // 2))  # its ref kernel is slow
        expected = target.as_array().copy()
        axes = kernels.physical_axes(big)
        strides = [kernels.operand_strides(axes, bias_dims, small),
                   kernels.operand_strides(axes, dims, big)]
        shape, strides = kernels.split_rows(*kernels.plan_axes(axes, strides + strides[1:]))
        partials = np.zeros((kernels.THREADS, case.C), np.float32)
        arguments = (target.as_array(), grad.as_array(), np.zeros(0, np.float32),
                     np.float32(1.0), shape, strides, partials)
        numba_ms = _median_ms(lambda arguments=arguments: kernels.reduce_kernel(*arguments),
                              repeats)
        np.testing.assert_allclose(target.as_array(), expected, rtol=1e-3)
        rows.append({"layout": name, "onednn_impl": pd.implementation, "onednn_ms": onednn_ms,
                     "numba_ms": numba_ms,
                     "numba_gbps": case.activation_bytes() / numba_ms / 1e6})
    return rows


def lines(rows):
    return [f"bias gradient {r['layout']:7}: oneDNN reduction ({r['onednn_impl']}) "
            f"{r['onednn_ms']:.2f} ms, kiln's numba kernel {r['numba_ms']:.2f} ms "
            f"({r['numba_gbps']:.1f} GB/s read)" for r in rows]
