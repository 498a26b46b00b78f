"""The labels and sample weights a `compute_loss` override reads (`Graph.loss_inputs`), and
the tensors it updates metrics with (`Graph.observed`).

Such a tensor has no node: the front end traced it as `y` (shaped like a model output) or
`sample_weight` (one value per sample, (None, 1) standing for Keras's (None,)), and the
override's loss terms read it with keras.ops. The plan gives each one a buffer of the batch
in the user's (numpy) layout, which the trainer fills before every step as it fills the loss
heads' labels; nothing flows back into it (no gradient). An observed tensor is copied out
after the forward into an array the trainer reads after the step.
"""

import numpy as np

from ..binding.memory import Memory
from ..ops.numba_config import SERIAL, njit
from ..ops.tensor import Tensor
from .plan_inputs import plain_desc
from .traced_loss import plain_of


def plan_loss_inputs(graph, batch_size, values, requires_grad):
    """Buffers for `graph.loss_inputs`, entered in `values`; returns [(role, array)] with
    role the tensor's `loss_input` ('y' or 'sample_weight', output index), array in Keras's
    shape with the batch first."""
    arrays = []
    for tensor in graph.loss_inputs:
        dims = (batch_size, *tensor.dims[1:])
        desc = plain_desc(dims, tensor.data_format, flattened=tensor.flattened)
        array = np.zeros((batch_size, *tensor.shape[1:]), np.float32)
        values[id(tensor)] = Tensor(Memory(desc, array.reshape(-1).view(np.uint8)),
                                    tensor.data_format, tensor.flattened)
        requires_grad[id(tensor)] = False
        arrays.append((tensor.loss_input, array))
    return arrays


@njit(**SERIAL)
def copy_kernel(source, target):
    for i in range(target.size):
        target[i] = source[i]


def plan_observed(builder, graph, values):
    """A copy of each of `graph.observed` in a buffer of its own, right after the forward
    (backward may reuse the tensor's bytes); returns {id(tensor): array in Keras's shape}."""
    arrays = {}
    for tensor in graph.observed:
        x = values[id(tensor)]
        plain = builder.reorder(x.memory, plain_of(x), f"{tensor.name} to plain")
        array = np.zeros(x.keras_shape, np.float32)
        builder.add_forward(builder.memory_kernel(
            copy_kernel, (plain, array.reshape(-1)), f"{tensor.name} kept for a metric"))
        arrays[id(tensor)] = array
    return arrays
