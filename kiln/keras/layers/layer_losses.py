"""Losses added inside a model: Keras's `Layer.add_loss(tensor)` and `Layer.losses`.

A layer's `call()` may add a loss computed with keras.ops on its symbolic tensors (a VAE's KL
term); Keras 2 scripts add one to the model itself (`vae.add_loss(vae_loss)`). The tensor is
part of the engine graph: the model plans it after the forward of every training and
evaluation step, sums it into the total loss (Keras 3's `ops.sum` of each added loss, with no
sample weights) and starts backward from it like from a loss head (kiln/plan/added_losses.py).

Each layer call collects the losses added while it runs (a nested layer's too) on its layer
node (`LayerNode.losses`); a model gathers those of the calls in its graph, so a model called
as a layer adds the losses of that call. As in Keras 3, `layer.losses` shows the losses of
the call being traced (inside a `call()` or a `compute_loss()` being traced) and, outside a
call, no added loss of a call(); it also lists the weight regularization penalties' current
values. A Keras 2 loss added to the model itself is listed (as the symbolic tensor).
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor

# one list per layer call in progress, innermost last: what add_loss appends to
collecting = []


def losses_in(structure):
    """The tensors of a loss (one tensor, or a list / tuple of them)."""
    if isinstance(structure, (list, tuple)):
        return [t for item in structure for t in losses_in(item)]
    return [structure]


def refuse_loss_values(context, tensors, role="input"):
    """A layer's input or a model's output reduced by keras.ops to one value per sample
    or for the batch is refused: kiln has no rank-1 tensors in a model and plans such a
    value only as a loss."""
    for tensor in tensors:
        if isinstance(tensor, SymbolicTensor) and tensor.loss_value:
            raise NotImplementedError(
                f"{context}: its {role} '{tensor.name}' is a keras.ops reduction to one "
                "value per sample (shape (None,)) or for the whole batch; inside a model "
                "kiln supports such a value only as a loss (add_loss, or what a loss "
                "function returns). Reduce with keepdims=True to keep it in the model")


class LayerLosses:
    """Mixed into Layer: add_loss and losses. `_own_losses` holds what was added outside
    any call (Keras 2's model.add_loss); `_traced_losses` the call being traced, if any."""

    def add_loss(self, loss):
        """Add `loss` (a symbolic tensor computed with keras.ops, or a list of them) to the
        total loss the model minimizes; summed over all of its elements, as Keras 3 does."""
        tensors = losses_in(loss)
        for tensor in tensors:
            if not isinstance(tensor, SymbolicTensor):
                raise TypeError(
                    f"{self.context}: add_loss takes a tensor computed with keras.ops from "
                    f"the tensors of the model (inside call(), or from a model's inputs and "
                    f"outputs), got {type(tensor).__name__}; kiln plans the loss into the "
                    "compiled step, so an eager value cannot be added")
        if collecting:
            collecting[-1].extend(tensors)
        else:
            self._check_own_losses(tensors)
            self.__dict__.setdefault("_own_losses", []).extend(tensors)

    def _check_own_losses(self, tensors):
        """Called for losses added outside any call (a model checks and replans)."""

    @property
    def losses(self):
        """The added losses of the call being traced (or added to the model itself), then
        the weight regularization penalties' values, as Keras 3's `Layer.losses`."""
        traced = self.__dict__.get("_traced_losses")
        added = list(traced) if traced is not None else list(self.__dict__.get(
            "_own_losses", ()))
        penalties = []
        for weight in self.trainable_weights:
            regularizer = getattr(weight, "regularizer", None)
            if regularizer is not None:
                penalties.append(np.float32(regularizer(weight.numpy())))
        return added + penalties


class CollectLosses:
    """`with CollectLosses() as added:` the losses add_loss receives inside the block (in a
    layer call, or a subclassed model traced without one) land in the list `added`, and then
    in the enclosing call's list too."""

    def __enter__(self):
        self.added = []
        collecting.append(self.added)
        return self.added

    def __exit__(self, *exc):
        collecting.pop()
        if collecting:
            collecting[-1].extend(self.added)
        return False


class DiscardLosses:
    """`with DiscardLosses():` losses added inside the block are dropped (the second call()
    that only checks a layer computes the same ops with training=True)."""

    def __enter__(self):
        collecting.append([])

    def __exit__(self, *exc):
        collecting.pop()
        return False
