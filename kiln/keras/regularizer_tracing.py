"""A user's weight regularizer (a `keras.regularizers.Regularizer` subclass whose
`__call__(x)` uses keras.ops) traced into the training step, as losses written with keras.ops
are (keras/losses/traced.py).

The regularizer is called once on a symbolic tensor shaped like the weight (its Keras shape);
the graph of engine ops it records is planned by kiln/plan/traced_penalties.py on the weight's
value every step: its value joins the reported loss and its backward adds the penalty's
gradient to the weight's, as Keras adds `regularizer(weight)` to the loss it differentiates.

The penalty must be one value: reductions over every axis of the weight at once
(`ops.sum(ops.abs(x))`, `ops.mean(...)`), elementwise math before them. A reduction over some
axes only, the first included, is refused by name (the engine reduces over a tensor's first
axis only together with all the others).
"""

from ..graph.symbolic import SymbolicTensor, tracing
from ..graph.topology import Graph
from ..ops.tensor import CHANNELS_LAST, logical_dims
from .ops.core import loss_context


def penalty_trace(regularizer):
    """trace(keras_shape) -> (Graph from the symbolic weight to the penalty, the symbolic
    weight): what the plan calls to plan `regularizer(weight)`."""
    context = loss_context(f"regularizer {type(regularizer).__name__}")

    def trace(keras_shape):
        shape = tuple(keras_shape) or (1,)
        if len(shape) == 1:  # the engine has no rank-1 tensors: a vector is (n, 1) there
            shape = (shape[0], 1)
        weight = SymbolicTensor(logical_dims(shape, CHANNELS_LAST), CHANNELS_LAST,
                                name="weight")
        tracing.append(context)  # names the regularizer when it misuses the tensor
        try:
            penalty = regularizer(weight)
        finally:
            tracing.pop()
        if not isinstance(penalty, SymbolicTensor):
            raise ValueError(f"{context}: __call__ returned {type(penalty).__name__}, not a "
                             "value computed from its argument with keras.ops")
        try:
            graph = Graph([weight], [penalty])
        except ValueError as error:
            raise ValueError(f"{context}: its value does not depend on the weight") from error
        dims = _planned_dims(graph, weight)
        if any(d != 1 for d in dims):
            raise ValueError(f"{context}: __call__ returned a tensor of shape "
                             f"{penalty.shape} for a weight of shape {tuple(keras_shape)}; a "
                             "regularizer returns one value (reduce over every axis, e.g. "
                             "keras.ops.sum)")
        return graph, weight

    return trace


def _planned_dims(graph, weight):
    """The dims the penalty will have in the plan: the ops' shape rules on the weight's dims
    (the symbolic tensors keep the first axis as a batch the rules do not reduce)."""
    dims = {id(weight): weight.dims}
    for node in graph.nodes:
        inputs = [dims[id(t)] for t in node.inputs]
        dims[id(node.output)] = tuple(node.op.output_dims(
            inputs if node.op.arity is None else inputs[0]))
    return dims[id(graph.outputs[0])]
