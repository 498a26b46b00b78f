"""The kind of each call of a step, and the rate a kind is judged by.

A call's kind is the oneDNN primitive kind it runs (as oneDNN itself reports it, so layer
names play no part), with convolutions whose every group reads one input channel (Keras's
DepthwiseConv2D, a Conv2D with groups == channels) set apart as "depthwise convolution";
kiln's own numba kernels are "numba kernel", and the update phase's entries are their own
kinds ("optimizer", "gradient reduction", ...).

Convolutions, deconvolutions, inner products and matmuls reuse every value they load many
times: they are compute-bound and rated in GFLOP/s against the same-run sgemm peak. Every
other kind, depthwise convolutions included (a few multiply-adds per value moved), is
memory-bound and rated in GB/s (the bytes of its arguments) against the same-run copy
bandwidth.
"""

from ..binding import constants as dnnl

COMPUTE_BOUND = frozenset({"convolution", "deconvolution", "inner product", "matmul"})

PRIMITIVE_KINDS = {
    dnnl.reorder: "reorder", dnnl.shuffle: "shuffle", dnnl.concat: "concat", dnnl.sum: "sum",
    dnnl.convolution: "convolution", dnnl.deconvolution: "deconvolution",
    dnnl.eltwise: "eltwise", dnnl.lrn: "lrn", dnnl.batch_normalization: "batch norm",
    dnnl.inner_product: "inner product", dnnl.rnn: "rnn", dnnl.binary: "binary",
    dnnl.matmul: "matmul", dnnl.resampling: "resampling", dnnl.pooling: "pooling",
    dnnl.reduction: "reduction", dnnl.prelu: "prelu", dnnl.softmax: "softmax",
    dnnl.layer_normalization: "layer norm",
}


def call_kind(call):
    """The kind of one plan call (a BoundCall or a numba KernelCall)."""
    primitive = getattr(call, "primitive", None)
    if primitive is None:
        return "numba kernel"
    number = primitive.pd.kind
    kind = PRIMITIVE_KINDS.get(number, f"primitive kind {number}")
    if kind == "convolution" and is_depthwise(call):
        return "depthwise convolution"
    return kind


def is_depthwise(call):
    """Whether a convolution call is depthwise: grouped weights (G, O/G, I/G, kh, kw) with
    more than one group and one input channel per group."""
    args = getattr(call, "args", {})
    weights = next((args[i] for i in (dnnl.ARG_WEIGHTS, dnnl.ARG_DIFF_WEIGHTS) if i in args),
                   None)
    output = next((args[i] for i in (dnnl.ARG_DST, dnnl.ARG_DIFF_DST) if i in args), None)
    if weights is None or output is None:
        return False
    dims = weights.desc.dims
    return len(dims) == len(output.desc.dims) + 1 and dims[0] > 1 and dims[2] == 1


def rate(kind, seconds, flops, moved, peaks):
    """{'gflops', 'pct_peak'} for a compute-bound kind that did FLOPs, else {'gbps',
    'pct_bandwidth'} when it moved bytes, else {} (no time, or nothing counted)."""
    if seconds <= 0:
        return {}
    if kind in COMPUTE_BOUND and flops:
        gflops = flops / seconds / 1e9
        return {"gflops": gflops, "pct_peak": 100 * gflops / peaks["matmul_gflops"]}
    if moved:
        gbps = moved / seconds / 1e9
        return {"gbps": gbps, "pct_bandwidth": 100 * gbps / peaks["copy_gbps"]}
    return {}


def by_kind(entries, peaks):
    """Entries (kind, calls, seconds, flops, bytes) added up per kind, slowest kind first:
    dicts with kind, calls, seconds, flops, bytes and the kind's rate (rate())."""
    totals = {}
    for kind, calls, seconds, flops, moved in entries:
        total = totals.setdefault(kind, [0, 0.0, 0.0, 0])
        total[0] += calls
        total[1] += seconds
        total[2] += flops
        total[3] += moved
    rows = [{"kind": kind, "calls": calls, "seconds": seconds, "flops": flops, "bytes": moved,
             **rate(kind, seconds, flops, moved, peaks)}
            for kind, (calls, seconds, flops, moved) in totals.items()]
    return sorted(rows, key=lambda row: -row["seconds"])
