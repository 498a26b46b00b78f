"""How a layer call moves Keras masks along (docs/architecture.md, "Masks"), as Keras 3's
Layer.__call__ does: a call() that names `mask` receives its input's masks, and the outputs of
a layer that supports masking carry compute_mask()'s mask."""

import inspect

from ...graph.symbolic import SymbolicTensor


def _flatten(structure):
    from .base_layer import flatten

    return flatten(structure)


def deliver_mask(layer, args, kwargs):
    """Put the masks of the first argument's tensors into `kwargs["mask"]` when `layer.call`
    names a `mask` argument and none was given. Returns the mask the outputs inherit (the
    given one, else the first input's)."""
    from .base_layer import pack_like

    first = args[0]
    masks = pack_like(first, [getattr(t, "_keras_mask", None) for t in _flatten(first)])
    given = kwargs.get("mask")
    if given is None and "mask" in inspect.signature(layer.call).parameters and any(
            m is not None for m in _flatten(masks)):
        kwargs["mask"] = given = masks
    return given if given is not None else masks


def set_output_masks(layer, inputs, outputs, previous_mask):
    """Outputs of a layer that supports masking (or computes its own masks, as Keras
    decides) carry compute_mask()'s mask, unless its call() set one; other layers drop it."""
    from .base_layer import Layer

    own = type(layer).compute_mask is not Layer.compute_mask
    if not (layer.supports_masking or own):
        return
    flat = [t for t in _flatten(outputs) if isinstance(t, SymbolicTensor)]
    if all(t._keras_mask is not None for t in flat):
        return
    masks = layer.compute_mask(inputs, previous_mask)
    masks = _flatten(masks) if isinstance(masks, (list, tuple)) else [masks] * len(flat)
    for tensor, mask in zip(flat, masks, strict=False):
        if tensor._keras_mask is None and isinstance(mask, SymbolicTensor):
            tensor._keras_mask = mask


def with_mask_of(source, tensor):
    """`tensor` carrying `source`'s mask (an activity penalty's view of a masked output)."""
    tensor._keras_mask = getattr(source, "_keras_mask", None)
    return tensor
