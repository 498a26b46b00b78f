"""A kiln step's profile, grouped the way a reader asks "where does the time go":
convolutions, dense layers, batch norm, adds, pooling, the loss, layout reorders, gradient
sums and the optimizer, each with its share of the step; the multiply-add groups (conv, dense)
also with GFLOP/s and % of the same-run sgemm peak, and the plan's buffer bytes."""

import re

from .models import forward_flops_per_layer

# (group, pattern on the call label) in the order they are tried
GROUPS = [
    ("reorder", r"to layout|gradient for (data|weights)|input for weights| input$|^output$"),
    ("gradient sum", r"gradient sum|sum of parts"),
    ("loss", r"cross-entropy"),
    ("optimizer", r"^optimizer update$"),
    ("batch norm", r"^batch_normalization|folded (scale|shift)"),
    ("conv", r"^conv2d"),
    ("dense", r"^dense"),
    ("add", r"^add"),
    ("pooling", r"pooling"),
    ("dropout", r"dropout"),
]


def group_of(label):
    for group, pattern in GROUPS:
        if re.search(pattern, label):
            return group
    return "other"


def grouped(profile):
    """{group: seconds} from a plan profile {label: seconds}."""
    totals = {}
    for label, seconds in profile.items():
        if label == "outside calls":
            continue
        group = group_of(label)
        totals[group] = totals.get(group, 0.0) + seconds
    return totals


def multiply_add_flops(model, batch, training):
    """{'conv': flop, 'dense': flop} a step does (forward; x3 in training but the first
    layer's backward-data, as models.training_flops counts)."""
    flops = {"conv": 0.0, "dense": 0.0}
    layers = [layer for layer in model.layers if getattr(layer, "kernel", None) is not None]
    for index, (layer, forward) in enumerate(zip(layers, forward_flops_per_layer(model, batch),
                                                 strict=True)):
        factor = (2 if index == 0 else 3) if training else 1
        flops["conv" if len(layer.kernel.shape) == 4 else "dense"] += forward * factor
    return flops


def lines(profile, step_ms, flops, peak_gflops, planned_bytes):
    totals = grouped(profile)
    out = [f"  {'group':<14}{'ms':>9}{'% step':>8}{'GFLOP/s':>10}{'% peak':>8}"]
    for group, seconds in sorted(totals.items(), key=lambda kv: -kv[1]):
        ms = seconds * 1e3
        row = f"  {group:<14}{ms:9.2f}{100 * ms / step_ms:8.1f}"
        if flops.get(group):
            rate = flops[group] / seconds / 1e9
            row += f"{rate:10.1f}{100 * rate / peak_gflops:8.1f}"
        out.append(row)
    total_flops = sum(flops.values())
    out.append(f"  step {step_ms:.2f} ms: {total_flops / step_ms / 1e6:.1f} GFLOP/s, "
               f"{100 * total_flops / step_ms / 1e6 / peak_gflops:.1f}% of the same-run sgemm "
               f"peak {peak_gflops:.1f} GFLOP/s")
    out.append(f"  planned buffers {planned_bytes['buffers'] / 2**20:.1f} MiB "
               f"(without reuse by liveness {planned_bytes['buffers_without_reuse'] / 2**20:.1f}"
               f" MiB; scratchpad {planned_bytes['scratchpad'] / 2**20:.2f} MiB)")
    return out
