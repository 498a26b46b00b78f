"""A user's loss (a function of (y_true, y_pred), or a Loss subclass's `call`) written with
keras.ops, as a head of the step: traced on symbolic tensors shaped like the model output
into a graph of engine ops (kiln/plan/traced_loss.py plans it, with its backward). The loss
returns one value per sample (or per element), or one value for the whole batch (a reduction
over every axis: a Keras loss that returns a scalar)."""

from ...graph.symbolic import SymbolicTensor, tracing
from ...graph.topology import Graph
from ...plan.traced_loss import TracedLossHead
from ..ops.core import loss_context


def traced_head(function, name, kwargs=None):
    """The head computing `function(y_true, y_pred, **kwargs)` inside the step."""
    kwargs = dict(kwargs or {})
    context = loss_context(name)  # also what tells keras.ops it is tracing a loss

    def trace(output):
        y_true, y_pred = (SymbolicTensor((None, *output.dims[1:]), output.data_format,
                                         output.flattened, name=role)
                          for role in ("y_true", "y_pred"))
        tracing.append(context)  # names the loss when it misuses a tensor
        try:
            loss = function(y_true, y_pred, **kwargs)
        finally:
            tracing.pop()
        if not isinstance(loss, SymbolicTensor):
            raise ValueError(f"{context}: returned {type(loss).__name__}, not a tensor "
                             "computed from y_true and y_pred with keras.ops")
        batch_reduced = all(d == 1 for d in loss.dims)  # one value for the whole batch
        if len(loss.shape) == 0 or (loss.shape[0] is not None and not batch_reduced):
            raise ValueError(f"{context}: returned a tensor of shape {loss.shape}; return "
                             "one value (or a tensor of them) per sample, which Keras "
                             "reduces (sum over the batch size), or one value for the batch")
        try:  # a loss may leave y_true out (a penalty on the output alone), not y_pred
            graph = Graph([y_true, y_pred], [loss])
        except ValueError as error:
            if "'y_true'" not in str(error):
                raise ValueError(f"{context}: its value does not depend on y_pred, so it "
                                 "gives the model no gradient") from error
            graph = Graph([y_pred], [loss])
        return graph, y_true, y_pred

    return TracedLossHead(name, trace)
