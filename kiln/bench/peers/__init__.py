"""Frameworks the harness can time. Each runs in its own worker process (kiln.bench.worker):
their thread pools and OpenMP runtimes never share a process with kiln's.

A runner module exposes:
    AVAILABLE: reason string when it cannot run here, else None
    unsupported(model, data_format, mode, precision) -> reason string or None
    prepare(model, data_format, mode, precision, **options) -> step(): one training step /
        inference batch

Each peer is timed in its default configuration and, as a separate framework, in the best
configuration its documentation recommends for CPU training (`torch-compile`,
`keras-tensorflow-onednn`); "best peer" in a report is the fastest of all of them.
"""

import importlib.util
from typing import NamedTuple


class Framework(NamedTuple):
    """module: the runner; env: variables the worker sets before the runner, and so its
    framework, is imported (None removes one, so that a variable of the calling shell can not
    turn a default configuration into another); options: keyword arguments of prepare()."""
    module: str
    env: dict
    options: dict


_KERAS = "kiln.bench.peers.keras3_runner"
_TORCH = "kiln.bench.peers.torch_runner"

FRAMEWORKS = {
    "kiln": Framework("kiln.bench.peers.kiln_runner", {}, {}),
    "keras-tensorflow": Framework(
        _KERAS, {"KERAS_BACKEND": "tensorflow", "TF_ENABLE_ONEDNN_OPTS": None}, {}),
    # TensorFlow's oneDNN kernels are on by default only on CPUs with AVX-512 VNNI, BF16 or
    # AMX; TF_ENABLE_ONEDNN_OPTS=1, TensorFlow's documented switch, turns them on anywhere.
    "keras-tensorflow-onednn": Framework(
        _KERAS, {"KERAS_BACKEND": "tensorflow", "TF_ENABLE_ONEDNN_OPTS": "1"}, {}),
    "keras-jax": Framework(_KERAS, {"KERAS_BACKEND": "jax"}, {}),
    "torch": Framework(_TORCH, {}, {}),
    # PyTorch 2's documented speed-up: torch.compile(model) (Inductor, which needs a C++
    # compiler at run time on CPUs); compiles on the first, untimed call.
    "torch-compile": Framework(_TORCH, {}, {"compile": True}),
}

REQUIRED_MODULES = {"kiln": [], "keras-tensorflow": ["keras", "tensorflow"],
                    "keras-tensorflow-onednn": ["keras", "tensorflow"],
                    "keras-jax": ["keras", "jax"], "torch": ["torch"], "torch-compile": ["torch"]}


def is_peer(framework):
    return framework != "kiln"


def installed(framework):
    """None when the framework's packages are importable, else why not."""
    missing = [m for m in REQUIRED_MODULES[framework] if importlib.util.find_spec(m) is None]
    if missing:
        return f"not installed ({', '.join(missing)}); `pip install -e .[peers]`"
    return None
