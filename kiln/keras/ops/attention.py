"""keras.ops.dot_product_attention, and the attention math the attention layers share.

A mask here is a float32 tensor of 1.0 (attend) / 0.0 (do not), the engine's bool: Keras's
logical AND of masks is their product. Keras applies a mask to the scores in one of two ways:
- `where(mask, scores, large negative)` then softmax (its fused dot-product attention, the
  op below, which MultiHeadAttention and GroupQueryAttention use without dropout and without
  returning the scores): a row masked everywhere becomes uniform;
- the `Softmax` layer's way (the other cases, and `Attention`): the same with -1e9, then
  `where(mask, probabilities, 0)`, so a row masked everywhere is all zeros.
Constant masks (the causal triangle, a numpy mask) are (T, S) arrays the plan holds.

Inside a model `attend` is Keras's (batch, steps, heads, dim) attention: the scores
`einsum("btnh,bsnh->bnts")` and the weighted values `einsum("bnts,bsnh->btnh")` are batched
matmuls reading and writing permuted axes (einsum_pairs.py), the scale a post-op of the
scores' matmul. Fewer key / value heads than query heads (grouped-query attention) are
repeated to the query heads first, as Keras repeats them (`repeat` on the heads axis: copies
of slices whose gradients the plan sums).
"""

import math

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from . import nn
from .comparisons import not_equal
from .comparisons import where as where_op
from .core import is_symbolic, keras_array, result, where
from .einsum_pairs import pair_einsum
from .elementwise import add, multiply
from .gathering import repeat

SOFTMAX_LARGE_NEGATIVE = -1e9   # keras.layers.Softmax's fill
FUSED_LARGE_NEGATIVE = float(-0.7 * np.finfo(np.float32).max)  # jax's dot_product_attention


def causal_triangle(query_length, value_length):
    """Keras's causal mask: query step i attends to value steps j <= i."""
    rows = np.arange(query_length)[:, None]
    columns = np.arange(value_length)[None, :]
    return (rows >= columns).astype(np.float32)


def as_bool(mask):
    """A user's mask (bools as 1.0 / 0.0, or any numbers) as Keras's `cast(mask, "bool")`."""
    return not_equal(mask, 0.0)


def combine(*masks):
    """The logical AND of the masks given (None ones skipped), or None."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    combined = present[0]
    for mask in present[1:]:
        combined = multiply(combined, mask)
    return combined


def masked_softmax(scores, mask, causal, fill, zero_masked):
    """softmax over the last axis of `scores` where `mask` (a tensor of the scores' rank, or
    None) and `causal` (a constant (T, S) array, or None) allow, filling the rest with `fill`;
    `zero_masked`: the Softmax layer's zeros at the masked places afterwards."""
    if mask is None and causal is None:
        return nn.softmax(scores, axis=-1)
    if mask is None:  # the constant alone: scores * m + (1 - m) * fill, its gradient m
        scores = add(multiply(scores, causal), (1.0 - causal) * fill)
        probabilities = nn.softmax(scores, axis=-1)
        return multiply(probabilities, causal) if zero_masked else probabilities
    if causal is not None:
        mask = multiply(mask, causal)
    probabilities = nn.softmax(where_op(mask, scores, fill), axis=-1)
    return where_op(mask, probabilities, 0.0) if zero_masked else probabilities


def repeat_heads(x, heads, context, argument):
    """x (B, S, K, H) with its K heads repeated to `heads` (K divides it), as Keras's
    `repeat(x, heads // K, axis=2)`."""
    kv_heads = x.shape[2]
    if heads % kv_heads:
        raise ValueError(f"{context}: the {heads} query heads must be a multiple of the "
                         f"{kv_heads} heads of argument {argument} (shape {x.shape})")
    return x if kv_heads == heads else repeat(x, heads // kv_heads, axis=2)


def attend(query, key, value, scale, mask=None, constant_mask=None, bias=None,
           fill=FUSED_LARGE_NEGATIVE, zero_masked=False, dropout=None):
    """Attention of (B, T, N, H) queries over (B, S, N, H) keys and values inside a model:
    (output (B, T, N, H), probabilities (B, N, T, S)). `mask`: a tensor broadcastable to the
    scores, `constant_mask`: a (T, S) array; `dropout`: a DropoutOp on the probabilities."""
    scores = pair_einsum("btnh", "bsnh", "bnts", query, key, scale=scale)
    if bias is not None:
        scores = add(scores, bias)
    probabilities = masked_softmax(scores, mask, constant_mask, fill, zero_masked)
    weights = probabilities if dropout is None else apply(dropout, probabilities)
    return pair_einsum("bnts", "bsnh", "btnh", weights, value), probabilities


# -- keras.ops.dot_product_attention -----------------------------------------------------------
def _checked_shapes(query, key, value):
    for argument, x in (("query", query), ("key", key), ("value", value)):
        if len(x.shape) != 4:
            raise ValueError(f"{where()}: keras.ops.dot_product_attention argument {argument} "
                             "must be a 4D tensor (batch, steps, heads, dim), got shape "
                             f"{tuple(x.shape)}")
    (_, _, heads, dim), (_, steps, kv_heads, key_dim) = query.shape[:4], key.shape[:4]
    if tuple(value.shape[1:3]) != (steps, kv_heads) or key_dim != dim:
        raise ValueError(f"{where()}: keras.ops.dot_product_attention arguments key and value "
                         f"must be (batch, S, K, {dim}) and (batch, S, K, dim), got key "
                         f"{tuple(key.shape)} and value {tuple(value.shape)}")
    if heads % kv_heads:
        raise ValueError(f"{where()}: keras.ops.dot_product_attention: the {heads} heads of "
                         f"argument query must be a multiple of the {kv_heads} heads of key "
                         "and value")
    return heads, dim


def _eager_attention(query, key, value, bias, mask, scale, is_causal):
    """jax.nn.dot_product_attention's "xla" computation in numpy (float32)."""
    heads = query.shape[2]
    repeats = heads // key.shape[2]
    key, value = np.repeat(key, repeats, axis=2), np.repeat(value, repeats, axis=2)
    logits = np.einsum("btnh,bsnh->bnts", query, key) * np.float32(scale)
    if bias is not None:
        logits = logits + bias
    allowed = np.ones(logits.shape, dtype=bool)
    if mask is not None:
        allowed &= np.asarray(mask).astype(bool)
    if is_causal:
        allowed &= causal_triangle(*logits.shape[2:]).astype(bool)
    logits = np.where(allowed, logits, np.float32(FUSED_LARGE_NEGATIVE))
    logits = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probabilities = logits / logits.sum(axis=-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", probabilities, value)


def _constant_mask(mask, steps):
    """A constant mask as a (T, S) array of 1.0 / 0.0 (it may not vary over batch or heads)."""
    array = np.asarray(keras_array(mask)).astype(bool)
    if array.ndim > 4 or any(d != 1 for d in array.shape[:-2]):
        raise ValueError(f"{where()}: keras.ops.dot_product_attention argument mask: a "
                         "constant mask inside a model must be broadcastable to (T, S) = "
                         f"{steps}, got shape {array.shape} (a mask that varies over the "
                         "batch is a model input)")
    try:
        return np.broadcast_to(array.reshape(array.shape[-2:]), steps).astype(np.float32)
    except ValueError:
        raise ValueError(f"{where()}: keras.ops.dot_product_attention argument mask of shape "
                         f"{array.shape} does not broadcast to (T, S) = {steps}") from None


def _symbolic_attention(query, key, value, bias, mask, scale, is_causal):
    heads = query.shape[2]
    context = f"{where()}: keras.ops.dot_product_attention"
    key = repeat_heads(key, heads, context, "key")
    value = repeat_heads(value, heads, context, "value")
    steps = (query.shape[1], key.shape[1])
    constant = causal_triangle(*steps) if is_causal else None
    tensor_mask = None
    if isinstance(mask, SymbolicTensor):
        expected = (None, heads, *steps)
        if len(mask.shape) != 4 or mask.shape[1] not in (1, heads) \
                or tuple(mask.shape[2:]) != steps:
            raise ValueError(f"{context} argument mask must be a tensor of shape (batch, 1 or "
                             f"heads, T, S) = {expected}, got {mask.shape}")
        tensor_mask = as_bool(mask)
    elif mask is not None:
        array = _constant_mask(mask, steps)
        constant = array if constant is None else constant * array
    for x in (query, key, value):
        if x.flattened:
            raise ValueError(f"{context}: arguments must be (batch, steps, heads, dim) "
                             f"tensors, got one flattened from {x.shape}")
    output, _ = attend(query, key, value, scale, tensor_mask, constant, bias)
    if output is None:
        raise ValueError(f"{context}: shapes query {query.shape}, key {key.shape}, value "
                         f"{value.shape} are not a planned product")
    return output


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None,
                          is_causal=False, flash_attention=None, attn_logits_soft_cap=None):
    """Keras 3's scaled dot-product attention on (batch, steps, heads, dim) arrays:
    softmax(query . key * scale + bias, masked) . value, the key / value heads repeated to the
    query heads (grouped-query attention). `flash_attention` is accepted; kiln has no flash
    path and computes the same result."""
    if attn_logits_soft_cap is not None:
        raise ValueError(f"{where()}: keras.ops.dot_product_attention argument "
                         "attn_logits_soft_cap is only supported for JAX on TPU (as Keras); "
                         f"expected None, got {attn_logits_soft_cap!r}")
    if is_symbolic(query, key, value):
        if not all(isinstance(x, SymbolicTensor) for x in (query, key, value)):
            raise TypeError(f"{where()}: keras.ops.dot_product_attention inside a model needs "
                            "query, key and value all tensors of the model")
        _, dim = _checked_shapes(query, key, value)
        scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
        return _symbolic_attention(query, key, value, bias, mask, scale, is_causal)
    query, key, value = (keras_array(x).astype(np.float32) for x in (query, key, value))
    _, dim = _checked_shapes(query, key, value)
    scale = 1.0 / math.sqrt(dim) if scale is None else float(scale)
    bias = None if bias is None else keras_array(bias).astype(np.float32)
    mask = None if mask is None else keras_array(mask)
    scores = (query.shape[0], query.shape[2], query.shape[1], key.shape[1])
    for argument, array in (("bias", bias), ("mask", mask)):
        try:
            if array is not None and np.broadcast_shapes(array.shape, scores) != scores:
                raise ValueError
        except ValueError:
            raise ValueError(f"{where()}: keras.ops.dot_product_attention argument {argument} "
                             f"must broadcast to the scores' shape (B, N, T, S) = {scores}, "
                             f"got shape {array.shape}") from None
    return result(_eager_attention(query, key, value, bias, mask, scale, is_causal))

