"""Symbolic tensors: what Keras layers' `call()` produce while a model is traced.

Calling a layer on a SymbolicTensor records the op that computes it; the plan compiler walks
these records back from the model output to get the ops in execution order. Dims are oneDNN's
logical order (N, C, H, W) with the batch left as None.
"""

from ..ops.tensor import CHANNELS_LAST, keras_shape


class SymbolicTensor:
    """Args:
        dims: logical dims with batch None, e.g. (None, 32, 26, 26).
        data_format: how Keras orders this tensor's axes.
        flattened: Keras sees (None, features) over 4D dims.
        op: the op that produces it (None for a model input); input: its input tensor.
    """

    def __init__(self, dims, data_format=CHANNELS_LAST, flattened=False, op=None, input=None):
        self.dims = tuple(dims)
        self.data_format = data_format
        self.flattened = flattened
        self.op = op
        self.input = input

    @property
    def shape(self):
        """The Keras shape, batch first (None)."""
        return keras_shape(self.dims, self.data_format, self.flattened)

    def __repr__(self):
        return f"<SymbolicTensor shape={self.shape}>"


def apply(op, x, flattened=None):
    """The SymbolicTensor produced by running `op` on `x`, using the op's shape rule."""
    probe = (1, *x.dims[1:])  # shape rules need a concrete batch; any value works
    out = op.output_dims(probe)
    keep_flat = x.flattened and len(out) == len(x.dims)
    return SymbolicTensor((None, *out[1:]), x.data_format,
                          keep_flat if flattened is None else flattened, op, x)


def ops_in_order(output):
    """The ops from the model input to `output`, first to last."""
    ops = []
    tensor = output
    while tensor.op is not None:
        ops.append(tensor.op)
        tensor = tensor.input
    return ops[::-1]
