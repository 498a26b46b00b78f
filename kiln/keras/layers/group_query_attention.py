"""GroupQueryAttention layer (`keras.layers.GroupQueryAttention`, Keras 3's class
GroupedQueryAttention), Keras 3's computation.

Grouped-query attention (Ainslie et al., 2023): `num_query_heads` query heads share
`num_key_value_heads` key / value heads (1: multi-query attention; equal: multi-head
attention). Its projections are EinsumDense sublayers named as Keras names them (query, key,
value, attention_output: weights "<layer>/query/kernel" ..., in Keras's order):
    query (B, T, U, H), key and value (B, S, V, H), repeated on the heads axis to U heads
    attention (keras/ops/attention.py): softmax(einsum("bquh,bkuh->buqk") / sqrt(H),
    masked) (B, U, T, S), dropout, einsum("buqk,bkuh->bquh") -> attention_output (B, T, dim)
The masks are MultiHeadAttention's: the query's Keras mask (B, T, 1), the value's and key's
(B, 1, S), the causal triangle, `attention_mask` (B, T, S), all ANDed, broadcast over the
heads; Keras's fused path (no dropout, no returned scores) and its Softmax layer's differ on
rows masked everywhere, and the layer picks the one Keras picks.
"""

import math

import numpy as np

from ...graph.symbolic import SymbolicTensor
from .. import ops
from ..ops import attention
from .attention_projections import _AttentionProjections, positive_int


class GroupedQueryAttention(_AttentionProjections):
    """Args: head_dim, num_query_heads, num_key_value_heads (divides num_query_heads),
    dropout, use_bias, flash_attention (accepted: the same result, kiln has no flash path),
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
    activity_regularizer, kernel_constraint, bias_constraint, seed, sliding_window (query step
    i attends to key steps j with |i - j| < sliding_window), use_gate (a sigmoid gate, a
    projection of the query, multiplies the attention before its output projection).

    Call arguments: query (B, T, dim), value (B, S, dim), key (B, S, dim_k; default value),
    query_mask (B, T), value_mask / key_mask (B, S) (default: the inputs' Keras masks),
    attention_mask (B, T, S), return_attention_scores, training, use_causal_mask."""

    supports_masking = True  # the output carries the query's mask, as Keras

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0,
                 use_bias=True, sliding_window=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("head_dim", head_dim), ("num_query_heads", num_query_heads),
                                ("num_key_value_heads", num_key_value_heads)):
            if not positive_int(value):
                raise ValueError(f"{self.context}: argument {argument} must be a positive int, "
                                 f"got {value!r}")
        if num_query_heads % num_key_value_heads:
            raise ValueError(f"{self.context}: argument num_query_heads must be divisible by "
                             f"num_key_value_heads, got num_query_heads={num_query_heads} and "
                             f"num_key_value_heads={num_key_value_heads}")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"{self.context}: argument dropout must be a float in [0, 1), "
                             f"got {dropout!r}")
        if sliding_window is not None and not positive_int(sliding_window):
            raise ValueError(f"{self.context}: argument sliding_window must be None or a "
                             f"positive int, got {sliding_window!r}")
        if flash_attention and dropout > 0:  # Keras's own refusal
            raise ValueError(f"{self.context}: argument dropout must be 0.0 with "
                             f"flash_attention=True (Keras has no dropout in flash attention), "
                             f"got {dropout!r}")
        self.head_dim, self.num_query_heads = int(head_dim), int(num_query_heads)
        self.num_key_value_heads = int(num_key_value_heads)
        self.num_repeats = self.num_query_heads // self.num_key_value_heads
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        self.sliding_window, self.use_gate = sliding_window, bool(use_gate)
        self._flash_attention = flash_attention
        self._set_projection_options(kernel_initializer, bias_initializer, kernel_regularizer,
                                     bias_regularizer, activity_regularizer, kernel_constraint,
                                     bias_constraint)

    def build(self, query_shape, value_shape=None, key_shape=None):
        if len(query_shape) != 3:
            raise ValueError(f"{self.context}: argument query must be a 3D tensor (batch, "
                             f"steps, features), got shape {tuple(query_shape)}")
        query_heads = (None, self.num_query_heads, self.head_dim)
        kv_heads = (None, self.num_key_value_heads, self.head_dim)
        self._query_dense = self._projection("bqm,muh->bquh", query_heads, "uh", "query")
        self._key_dense = self._projection("bkm,mvh->bkvh", kv_heads, "vh", "key")
        if self.use_gate:  # built between key and value, as Keras orders the weights
            self._gate_dense = self._projection("bqm,muh->bquh", query_heads, "uh", "gate",
                                                activation="sigmoid")
        self._value_dense = self._projection("bkm,mvh->bkvh", kv_heads, "vh", "value")
        self.feature_dim = query_shape[-1]
        self._output_dense = self._projection("bquh,uhm->bqm", (None, self.feature_dim), "m",
                                              "attention_output")
        self._reserve_sublayers()
        self.built = True

    # -- the call -----------------------------------------------------------------------------
    def _checked_inputs(self, query, value, key, attention_mask):
        for argument, tensor in (("query", query), ("value", value), ("key", key)):
            if tensor is not None and (not isinstance(tensor, SymbolicTensor)
                                       or len(tensor.shape) != 3):
                raise ValueError(f"{self.context}: argument {argument} must be a 3D tensor "
                                 f"(batch, steps, features), got "
                                 f"{getattr(tensor, 'shape', tensor)!r}")
        if query.shape[-1] != value.shape[-1]:  # Keras's compute_output_shape refuses it
            raise ValueError(f"{self.context}: the last dimension of query and value must be "
                             f"equal, got query {query.shape} and value {value.shape}")
        if key is not None and key.shape[1] != value.shape[1]:
            raise ValueError(f"{self.context}: all dimensions of value and key, except the "
                             f"last one, must be equal: value {value.shape}, key {key.shape}")
        expected = (None, query.shape[1], value.shape[1])
        if attention_mask is not None and (not isinstance(attention_mask, SymbolicTensor)
                                           or tuple(attention_mask.shape) != expected):
            raise ValueError(f"{self.context}: argument attention_mask must be a tensor of "
                             f"shape (batch, T, S) = {expected}, got "
                             f"{getattr(attention_mask, 'shape', type(attention_mask))!r}")

    def _padding_masks(self, query, value, key, query_mask, value_mask, key_mask):
        """The (B, T, 1) and (B, 1, S) masks: the ones given, else the inputs' Keras masks
        (Keras's Layer.__call__ passes those as query_mask, value_mask, key_mask)."""
        given = {"query_mask": query_mask, "value_mask": value_mask, "key_mask": key_mask}
        masks = []
        for (argument, mask), tensor, axis in zip(given.items(), (query, value, key),
                                                  (-1, -2, -2), strict=True):
            if mask is None and tensor is not None:
                mask = tensor._keras_mask
            if mask is None:
                masks.append(None)
                continue
            steps = (tensor if tensor is not None else value).shape[1]
            if not isinstance(mask, SymbolicTensor) or tuple(mask.shape) != (None, steps):
                raise ValueError(f"{self.context}: argument {argument} must be a tensor of "
                                 f"shape (batch, {steps}), got "
                                 f"{getattr(mask, 'shape', type(mask))!r}")
            masks.append(ops.expand_dims(attention.as_bool(mask), axis))
        return masks

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        self._checked_inputs(query, value, key, attention_mask)
        if self._flash_attention and return_attention_scores:  # Keras's own refusal
            raise ValueError(f"{self.context}: argument return_attention_scores=True is not "
                             "supported with flash_attention=True (as Keras)")
        user_mask = None if attention_mask is None else attention.as_bool(attention_mask)
        mask = attention.combine(*self._padding_masks(query, value, key, query_mask,
                                                      value_mask, key_mask), user_mask)
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # broadcast over the heads
        causal = self._constant_mask(query.shape[1], value.shape[1], use_causal_mask)
        gate = self._gate_dense(query) if self.use_gate else None
        q = self._query_dense(query)
        k = self._key_dense(value if key is None else key)
        v = self._value_dense(value)
        # Keras's ops.repeat(key, num_repeats, axis=2): copies of each head, adjacent
        k = attention.repeat_heads(k, self.num_query_heads, self.context, "key")
        v = attention.repeat_heads(v, self.num_query_heads, self.context, "value")
        # Keras runs ops.dot_product_attention unless there is dropout or the scores are
        # returned; then its Softmax layer, which zeros rows masked everywhere
        fused = not (self.dropout > 0 or return_attention_scores)
        output, probabilities = attention.attend(
            q, k, v, 1.0 / math.sqrt(float(self.head_dim)), mask, causal,
            fill=attention.FUSED_LARGE_NEGATIVE if fused
            else attention.SOFTMAX_LARGE_NEGATIVE, zero_masked=not fused,
            dropout=self._dropout_op)
        output = self._output_dense(output if gate is None else ops.multiply(output, gate))
        self._returns_scores = bool(return_attention_scores)
        if return_attention_scores:
            return output, probabilities
        return output

    def _constant_mask(self, query_length, value_length, use_causal_mask):
        """The causal triangle and the sliding window's band |i - j| < w, ANDed, or None."""
        mask = attention.causal_triangle(query_length, value_length) if use_causal_mask \
            else None
        if self.sliding_window is not None:
            distance = np.abs(np.arange(query_length)[:, None] - np.arange(value_length))
            band = (distance < self.sliding_window).astype(np.float32)
            mask = band if mask is None else mask * band
        return mask

    def compute_mask(self, inputs, previous_mask):
        """The query's mask on the output (not on the scores), as Keras."""
        return [previous_mask, None] if self._returns_scores else previous_mask

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        return tuple(query_shape)

    def get_config(self):
        return {**super().get_config(), "head_dim": self.head_dim,
                "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads, "use_bias": self.use_bias,
                "use_gate": self.use_gate, "sliding_window": self.sliding_window,
                "dropout": self.dropout,
                **self.projection_config(), "seed": self.seed}


GroupQueryAttention = GroupedQueryAttention  # Keras's public name for the class
