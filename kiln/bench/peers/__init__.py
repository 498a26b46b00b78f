"""Frameworks the harness can time. Each runs in its own worker process (kiln.bench.worker):
their thread pools and OpenMP runtimes never share a process with kiln's.

A runner module exposes:
    AVAILABLE: reason string when it cannot run here, else None
    unsupported(model, data_format, mode, precision) -> reason string or None
    prepare(model, data_format, mode, precision) -> step(): one training step / inference batch
"""

import importlib.util

FRAMEWORKS = {
    "kiln": ("kiln.bench.peers.kiln_runner", None),
    "keras-tensorflow": ("kiln.bench.peers.keras3_runner", "tensorflow"),
    "keras-jax": ("kiln.bench.peers.keras3_runner", "jax"),
    "torch": ("kiln.bench.peers.torch_runner", None),
}

REQUIRED_MODULES = {"kiln": [], "keras-tensorflow": ["keras", "tensorflow"],
                    "keras-jax": ["keras", "jax"], "torch": ["torch"]}


def installed(framework):
    """None when the framework's packages are importable, else why not."""
    missing = [m for m in REQUIRED_MODULES[framework] if importlib.util.find_spec(m) is None]
    if missing:
        return f"not installed ({', '.join(missing)}); `pip install -e .[peers]`"
    return None
