"""Losses added inside the model (Keras's `add_loss`), planned after the forward.

An added loss is a tensor of the model's graph (`Graph.added_losses`), computed by the
graph's own ops from the layers' tensors (a VAE's KL term reduced with keras.ops to one value
for the batch, or a value per sample). Keras 3 adds `ops.sum(loss)` of each to the total loss,
with no sample weights (`Trainer._aggregate_additional_loss`): here one serial kernel sums the
tensor's plain bytes into a loss term of the plan (`builder.loss_term()`, which the plan adds
to the reported total with the regularization penalties) and, in a training plan, writes the
gradient of that sum, ones, as the tensor's gradient; backward then walks the graph from it
like from a loss head's gradient.
"""

import numpy as np

from ..ops.numba_config import SERIAL, njit
from .traced_loss import plain_of


@njit(**SERIAL)
def sum_added_loss_kernel(values, term, seed):
    """term[0] = sum(values); seed = d term / d values = ones (seed may be empty)."""
    total = 0.0
    for i in range(values.size):
        total += values[i]
    term[0] = total
    for i in range(seed.size):
        seed[i] = np.float32(1.0)


def plan_added_losses(builder, owners, losses, values, requires_grad, training):
    """Add each loss's sum kernel; returns [(loss tensor, its gradient Memory)] for the
    training backward (none for a loss no weight reaches, nor in an evaluation plan)."""
    seeds = []
    for index, tensor in enumerate(losses):
        x = values[id(tensor)]
        owner = f"add_loss {index} ({tensor.name})"
        with owners.claim(owner, "loss"):
            plain = builder.reorder(x.memory, plain_of(x), f"{owner} to plain")
            learns = training and requires_grad.get(id(tensor), False)
            seed = builder.allocate(plain.desc) if learns else None
            builder.add_forward(builder.memory_kernel(
                sum_added_loss_kernel,
                (plain, builder.loss_term(), seed if learns else np.zeros(0, np.float32)),
                f"{owner} sum"))
        if learns:
            seeds.append((tensor, seed))
    return seeds
