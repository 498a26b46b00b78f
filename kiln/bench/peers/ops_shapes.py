"""The `kiln bench ops` case every runner times: a per-channel bias broadcast-added onto an
activation, forward (y = x + b) and backward (dx = dy, db = dy summed over N, H, W), with the
same shapes and values in every framework."""

import numpy as np

N, C, H, W = 128, 64, 24, 24
CASE = "broadcast_add"
DIRECTIONS = ("forward", "backward")


def activation_bytes():
    return N * C * H * W * 4


def data(data_format, seed=0):
    """(x, bias, dy): x and dy float32 in the Keras layout of `data_format`, bias (C,)."""
    rng = np.random.default_rng(seed)
    x = rng.random((N, H, W, C), dtype=np.float32)
    dy = rng.random((N, H, W, C), dtype=np.float32)
    bias = rng.random(C, dtype=np.float32)
    if data_format == "channels_first":
        x, dy = (np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in (x, dy))
    return x, bias, dy


def check(model, mode, precision):
    """The reason a request is not this case (None when it is)."""
    if model != CASE or mode not in DIRECTIONS or precision != "f32":
        return f"only {CASE} forward / backward in f32"
    return None
