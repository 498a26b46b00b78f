"""Attention masks inside a model, as Keras 3 combines and applies them.

A mask here is a float32 tensor of 1.0 (attend) / 0.0 (do not), the engine's bool: Keras's
logical AND of masks is their product. Keras applies a mask to the scores in one of two ways,
and MultiHeadAttention picks the one Keras picks:
- `where(mask, scores, large negative)` then softmax (Keras's fused dot-product attention,
  which MultiHeadAttention uses without dropout and without returning the scores): a row masked
  everywhere becomes uniform;
- the `Softmax` layer's way (the other cases, and `Attention`): the same, then
  `where(mask, probabilities, 0)`, so a row masked everywhere is all zeros.
The causal mask is a constant (T, S) lower triangle the plan holds.
"""

import numpy as np

from .. import ops

SOFTMAX_LARGE_NEGATIVE = -1e9   # keras.layers.Softmax's fill
FUSED_LARGE_NEGATIVE = float(-0.7 * np.finfo(np.float32).max)  # jax's dot_product_attention


def causal_triangle(query_length, value_length):
    """Keras's causal mask: query step i attends to value steps j <= i."""
    rows = np.arange(query_length)[:, None]
    columns = np.arange(value_length)[None, :]
    return (rows >= columns).astype(np.float32)


def as_bool(mask):
    """A user's mask (bools as 1.0 / 0.0, or any numbers) as Keras's `cast(mask, "bool")`."""
    return ops.not_equal(mask, 0.0)


def combine(*masks):
    """The logical AND of the masks given (None ones skipped), or None."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    combined = present[0]
    for mask in present[1:]:
        combined = ops.multiply(combined, mask)
    return combined


def masked_softmax(scores, mask, causal, fill, zero_masked):
    """softmax over the last axis of `scores` where `mask` (a tensor of the scores' rank, or
    None) and `causal` (a constant (T, S) array, or None) allow, filling the rest with `fill`;
    `zero_masked`: the Softmax layer's zeros at the masked places afterwards."""
    if mask is None and causal is None:
        return ops.softmax(scores, axis=-1)
    if mask is None:  # the constant alone: scores * m + (1 - m) * fill, its gradient m
        scores = ops.add(ops.multiply(scores, causal), (1.0 - causal) * fill)
        probabilities = ops.softmax(scores, axis=-1)
        return ops.multiply(probabilities, causal) if zero_masked else probabilities
    if causal is not None:
        mask = ops.multiply(mask, causal)
    probabilities = ops.softmax(ops.where(mask, scores, fill), axis=-1)
    return ops.where(mask, probabilities, 0.0) if zero_masked else probabilities
