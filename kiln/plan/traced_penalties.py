"""Penalties of weights whose regularizer the user wrote with keras.ops, planned as ops of
the step (the front end traced them: kiln/keras/regularizer_tracing.py).

For each trainable parameter with such a penalty: its value is copied in its Keras layout
into a plan buffer (one reorder when it is stored in another layout, one copy kernel), the
traced ops run forward on it after the model's forward, and a kernel writes the penalty into a
loss term of the plan (added to the reported loss, as Keras adds regularization losses). In
a training plan, backward starts from a gradient of 1, walks the traced ops in reverse, and
the weight's gradient joins the parameter's gradient as one more part (summed with the
model's by the gradient sums), before the optimizer runs.
"""

import numpy as np

from ..ops.numba_config import SERIAL, njit
from ..ops.tensor import Tensor
from .gradients import GradientMap
from .traced_loss import plain_of


@njit(**SERIAL)
def copy_kernel(source, target):
    for i in range(target.size):
        target[i] = source[i]


@njit(**SERIAL)
def penalty_term_kernel(value, term, seed):
    """term = the penalty (one value); seed = its gradient in the loss, 1."""
    term[0] = value[0]
    seed[0] = np.float32(1.0)


def plan_user_penalties(builder, parameters, owners):
    """Plan every traced penalty of `parameters` (a ParameterStore); their values go to
    builder.loss_term()s. Called after the model's backward (training) or its losses
    (evaluation)."""
    with owners.claim("weight penalties", "loss"):
        for name, parameter in list(parameters.parameters.items()):
            trace = getattr(parameter, "penalty", None)
            if trace is not None and parameter.trainable:
                _plan_penalty(builder, name, parameter, trace)


def _plan_penalty(builder, name, parameter, trace):
    graph, weight = trace(parameter.keras_shape)
    label = f"{name} regularizer"
    keras_desc = plain_of(weight)
    stored = builder.param(name, parameter.user_desc)  # the value, in Keras order
    value = builder.allocate(keras_desc)
    builder.add_forward(builder.memory_kernel(copy_kernel, (stored, value),
                                              f"{label} weight"))
    want_grad = builder.wants_grad(name)
    values = {id(weight): Tensor(value, weight.data_format, False)}
    requires_grad = {id(weight): want_grad}
    backwards = []
    for node in graph.nodes:
        many = node.op.arity is None
        xs = [values[id(t)] for t in node.inputs]
        needs = [requires_grad[id(t)] for t in node.inputs]
        output, backward = node.op.forward(builder, xs if many else xs[0],
                                           needs if many else needs[0])
        values[id(node.output)] = output
        requires_grad[id(node.output)] = any(needs)
        backwards.append((node, backward, many))
    penalty = values[id(graph.outputs[0])]
    plain = builder.reorder(penalty.memory, plain_of(penalty), f"{label} to plain")
    if int(np.prod(plain.desc.dims)) != 1:
        raise ValueError(f"{label}: the penalty has dims {plain.desc.dims}, expected one "
                         "value (reduce over every axis of the weight)")
    seed = builder.allocate(plain.desc)
    builder.add_forward(builder.memory_kernel(penalty_term_kernel,
                                              (plain, builder.loss_term(), seed), label))
    if not want_grad:
        return
    grads = GradientMap(builder, requires_grad)
    grads.deliver([graph.outputs[0]], [seed])
    for node, backward, many in reversed(backwards):
        grad = grads.take(node.output)
        if grad is not None:
            result = backward(grad)
            grads.deliver(node.inputs, result if many else [result])
    grad = grads.take(weight)
    if grad is None:
        raise ValueError(f"{label}: the penalty does not depend on the weight")
    grad = builder.reorder(grad, keras_desc, f"{label} gradient to plain", backward=True)
    target = builder.param_grad(name, parameter.user_desc)
    builder.add_backward(builder.memory_kernel(copy_kernel, (grad, target),
                                               f"{label} gradient"))

