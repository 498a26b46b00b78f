"""A loss written by the user with keras.ops (`compile(loss=my_loss)`, a Loss subclass's
`call()`), planned as ops of the step like a custom layer's.

The front end traces the function on two symbolic tensors, y_true and y_pred, shaped like the
model output; the head plans that graph's ops after the model's forward with the labels
buffer as y_true and the output as y_pred, then Keras's "sum_over_batch_size" reduction: the
sum of sample_weight * loss over every element of the loss tensor, divided by its number of
elements. A loss already reduced over the whole batch (one value, a Keras loss returning a
scalar) is weighted as Keras does it: value * mean(sample_weight). Backward starts from that
reduction's gradient (loss_weight * sample_weight / count per element, loss_weight *
mean(sample_weight) for the one value) and walks the loss graph in reverse like the model's
(gradients summed where y_pred is read twice); its calls come before the model's backward.
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from ..ops.losses.head import LOSS, LossHead, keras_order_tag
from ..ops.numba_config import SERIAL, njit
from ..ops.tensor import Tensor
from .gradients import GradientMap


@njit(**SERIAL)
def reduce_loss_kernel(stats, seed, values, weights, per_sample, scale):
    """stats[LOSS] = sum(weights[i] * values[i, k]) / values.size; seed = the gradient of
    that times `scale` (the output's loss weight) w.r.t. values, per element."""
    count = values.size
    total = 0.0
    for i in range(weights.size):
        w = weights[i]
        row = 0.0
        for k in range(per_sample):
            row += values[i * per_sample + k]
        total += w * row
        g = np.float32(scale * w / count)
        for k in range(per_sample):
            seed[i * per_sample + k] = g
    stats[LOSS] = total / count


@njit(**SERIAL)
def weigh_batch_loss_kernel(stats, seed, value, weights, scale):
    """A loss that is already one value for the batch, as Keras weighs a scalar loss: every
    sample's weight times it, summed over the batch size, i.e. value * mean(weights)."""
    mean_weight = 0.0
    for i in range(weights.size):
        mean_weight += weights[i]
    mean_weight /= max(weights.size, 1)
    stats[LOSS] = value[0] * mean_weight
    seed[0] = np.float32(scale * mean_weight)


def plain_of(x):
    """The plain layout of Tensor `x` in the order Keras shows its axes."""
    if len(x.dims) == 4:
        return MemoryDesc.with_tag(x.dims, dnnl.f32, keras_order_tag(x))
    return MemoryDesc.with_tag(x.dims, dnnl.f32)


class TracedLossHead(LossHead):
    """Args:
        name: the loss's name (for messages and logs).
        trace: trace(output) -> (Graph of one output, the loss: a tensor of batch N; its
            symbolic y_true; its symbolic y_pred), `output` the model output's Tensor (its
            dims, data format and flattening give the symbolic tensors' shapes).
    """

    per_element = True  # an image-shaped output is handed to the loss as it is

    def __init__(self, name, trace):
        super().__init__(name)
        self.trace = trace

    def plan(self, builder, x, labels, weights, scale, want_grad, fused):
        _, outputs = self.plain(builder, x, f"{self.name}")
        graph, y_true, y_pred = self.trace(x)
        label_memory = Memory(plain_of(x), labels.reshape(-1).view(np.uint8))
        values = {id(y_true): Tensor(label_memory, x.data_format, x.flattened),
                  id(y_pred): x}
        requires_grad = {id(y_true): False, id(y_pred): bool(want_grad)}
        backwards = []
        for node in graph.nodes:
            op = node.op
            many = op.arity is None
            xs = [values[id(t)] for t in node.inputs]
            needs = [requires_grad[id(t)] for t in node.inputs]
            output, backward = op.forward(builder, xs if many else xs[0],
                                          needs if many else needs[0])
            values[id(node.output)] = output
            requires_grad[id(node.output)] = any(needs)
            backwards.append((node, backward, many))
        loss = values[id(graph.outputs[0])]
        batch_reduced = all(d == 1 for d in loss.dims) and x.dims[0] != 1
        if loss.dims[0] != x.dims[0] and not batch_reduced:
            raise ValueError(f"loss '{self.name}': returned a tensor of dims {loss.dims}; a "
                             f"loss returns one value (or a tensor of them) per sample of the "
                             f"batch of {x.dims[0]}")
        plain = builder.reorder(loss.memory, plain_of(loss), f"{self.name} loss to plain")
        seed = builder.allocate(plain.desc)
        stats = self.stats()
        if batch_reduced:
            builder.add_forward(builder.memory_kernel(weigh_batch_loss_kernel, (
                stats, seed, plain, weights, np.float32(scale)),
                f"{self.name} batch loss weighted"))
        else:
            per_sample = int(np.prod(loss.dims[1:]))
            builder.add_forward(builder.memory_kernel(reduce_loss_kernel, (
                stats, seed, plain, weights, per_sample, np.float32(scale)),
                f"{self.name} loss reduction"))
        if not want_grad:
            return outputs, stats, None
        grads = GradientMap(builder, requires_grad)
        grads.deliver([graph.outputs[0]], [seed])
        for node, backward, many in reversed(backwards):
            grad = grads.take(node.output)
            if grad is None:
                continue
            result = backward(grad)
            grads.deliver(node.inputs, result if many else [result])
        grad = grads.take(y_pred)
        if grad is None:
            raise ValueError(f"loss '{self.name}': its value does not depend on y_pred, so "
                             "it gives the model no gradient")
        grad = builder.reorder(grad, plain_of(x), f"{self.name} gradient to plain",
                               backward=True)
        n = x.dims[0]
        return outputs, stats, Memory(MemoryDesc.with_tag((n, int(np.prod(x.dims[1:]))),
                                                          dnnl.f32, dnnl.ab), grad.storage)
