"""MultiHeadAttention layer (`keras.layers.MultiHeadAttention`), Keras 3's computation.

Its four projections are EinsumDense sublayers named as Keras names them (query, key, value,
attention_output: weights "<layer>/query/kernel", ... in Keras's order). The attention itself
is Keras's einsums, planned as batched matmuls (keras/ops/einsum_pairs.py):
    scores = einsum("aecd,abcd->acbe", key, query) / sqrt(key_dim)   (B, N, T, S)
             (Keras scales the query; here a post-op of the scores' matmul)
    probabilities = masked softmax over S (attention_masks.py), dropout
    output = einsum("acbe,aecd->abcd", probabilities, value) (B, T, N, H) -> attention_output
The mask is Keras's: the query's Keras mask (B, T, 1), the value's and key's (B, 1, S), the
causal triangle and `attention_mask` (B, T, S), all ANDed, broadcast over the heads.
"""

import math

from ...graph.symbolic import SymbolicTensor, apply
from .. import ops
from ..ops.einsum_pairs import pair_einsum
from . import attention_masks
from .attention_projections import _AttentionProjections, positive_int


class MultiHeadAttention(_AttentionProjections):
    """Args: num_heads, key_dim, value_dim (default key_dim), dropout, use_bias, output_shape
    (default: the query's feature size), attention_axes (the sequence axis, the default, only),
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
    activity_regularizer, kernel_constraint, bias_constraint, seed.

    Call arguments: query (B, T, dim), value (B, S, dim), key (B, S, dim; default value),
    attention_mask (B, T, S), return_attention_scores, training, use_causal_mask."""

    supports_masking = True  # the output carries the query's mask, as Keras

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, sliding_window=None,
                 flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
                 use_gate=False, seed=None, **kwargs):
        super().__init__(**kwargs)
        for argument, value, optional in (("num_heads", num_heads, False),
                                          ("key_dim", key_dim, False),
                                          ("value_dim", value_dim, True)):
            if not positive_int(value, optional):
                raise ValueError(f"{self.context}: argument {argument} must be a positive "
                                 f"int{' or None' if optional else ''}, got {value!r}")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"{self.context}: argument dropout must be a float in [0, 1), "
                             f"got {dropout!r}")
        for argument, value in (("sliding_window", sliding_window), ("use_gate", use_gate),
                                ("flash_attention", flash_attention)):
            if value is not None and value is not False:
                raise ValueError(f"{self.context}: argument {argument} is not supported yet, "
                                 f"expected None or False, got {value!r}")
        if isinstance(attention_axes, int):
            attention_axes = (attention_axes,)
        if attention_axes is not None and tuple(attention_axes) not in ((1,), (-2,)):
            raise NotImplementedError(
                f"{self.context}: argument attention_axes={attention_axes!r} is not supported "
                "yet; attention runs over the sequence axis of (batch, steps, features) "
                "inputs (attention_axes=None or 1)")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(value_dim) if value_dim else self.key_dim
        self.dropout, self.use_bias, self.seed = float(dropout), bool(use_bias), seed
        if output_shape:
            try:
                output_shape = ((output_shape,) if isinstance(output_shape, int)
                                else tuple(output_shape))
            except TypeError:
                raise ValueError(f"{self.context}: argument output_shape must be an int, a "
                                 f"tuple or a list, got {output_shape!r}") from None
            if len(output_shape) != 1 or not positive_int(output_shape[0]):
                raise NotImplementedError(
                    f"{self.context}: argument output_shape={output_shape!r} is not supported "
                    "yet; expected one positive int (the output's feature size)")
        self._output_shape = output_shape or None
        self._attention_axes = None if attention_axes is None else (1,)
        self._set_projection_options(kernel_initializer, bias_initializer, kernel_regularizer,
                                     bias_regularizer, activity_regularizer, kernel_constraint,
                                     bias_constraint)

    @property
    def attention_axes(self):
        return self._attention_axes

    def build(self, query_shape, value_shape=None, key_shape=None):
        if len(query_shape) != 3:
            raise ValueError(f"{self.context}: argument query must be a 3D tensor (batch, "
                             f"steps, features), got shape {tuple(query_shape)}")
        steps_heads = (None, self.num_heads, self.key_dim)
        self.query_dense = self._projection("abc,cde->abde", steps_heads, "de", "query")
        self.key_dense = self._projection("abc,cde->abde", steps_heads, "de", "key")
        self.value_dense = self._projection("abc,cde->abde",
                                            (None, self.num_heads, self.value_dim), "de",
                                            "value")
        units = self._output_shape[0] if self._output_shape else query_shape[-1]
        self.output_dense = self._projection("abcd,cde->abe", (None, units), "e",
                                             "attention_output")
        self._attention_axes = (1,)
        self._reserve_sublayers()
        self.built = True

    # -- the call -----------------------------------------------------------------------------
    def _checked_inputs(self, query, value, key, attention_mask):
        for argument, tensor in (("value", value), ("key", key)):
            if tensor is not None and (not isinstance(tensor, SymbolicTensor)
                                       or len(tensor.shape) != 3):
                raise ValueError(f"{self.context}: argument {argument} must be a 3D tensor "
                                 f"(batch, steps, features), got "
                                 f"{getattr(tensor, 'shape', tensor)!r}")
        if key is not None and key.shape[1] != value.shape[1]:
            raise ValueError(f"{self.context}: all dimensions of value and key, except the "
                             f"last one, must be equal: value {value.shape}, key {key.shape}")
        if len(query.shape) != 3:
            raise ValueError(f"{self.context}: argument query must be a 3D tensor (batch, "
                             f"steps, features), got shape {query.shape}")
        expected = (None, query.shape[1], value.shape[1])
        if attention_mask is not None and (not isinstance(attention_mask, SymbolicTensor)
                                           or tuple(attention_mask.shape) != expected):
            raise ValueError(f"{self.context}: argument attention_mask must be a tensor of "
                             f"shape (batch, T, S) = {expected}, got "
                             f"{getattr(attention_mask, 'shape', type(attention_mask))!r}")

    def _keras_masks(self, query, value, key):
        """Keras's mask from the inputs' Keras masks: (B, T, 1) and (B, 1, S)."""
        query_mask = query._keras_mask
        masks = [None if query_mask is None else ops.expand_dims(query_mask, -1)]
        for tensor in (value, key):
            mask = None if tensor is None else tensor._keras_mask
            masks.append(None if mask is None else ops.expand_dims(mask, -2))
        return masks

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False):
        self._checked_inputs(query, value, key, attention_mask)
        user_mask = None if attention_mask is None else attention_masks.as_bool(attention_mask)
        mask = attention_masks.combine(*self._keras_masks(query, value, key), user_mask)
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # broadcast over the heads
        causal = (attention_masks.causal_triangle(query.shape[1], value.shape[1])
                  if use_causal_mask else None)
        q = self.query_dense(query)
        k = self.key_dense(value if key is None else key)
        v = self.value_dense(value)
        # Keras scales the query by 1/sqrt(key_dim); here the scores matmul does (a post-op)
        scores = pair_einsum("aecd", "abcd", "acbe", k, q,
                             scale=1.0 / math.sqrt(float(self.key_dim)))
        # Keras runs its fused dot-product attention unless there is dropout or the scores
        # are returned; the two differ on rows masked everywhere (attention_masks.py)
        fused = not (self.dropout > 0 or return_attention_scores)
        probabilities = attention_masks.masked_softmax(
            scores, mask, causal,
            attention_masks.FUSED_LARGE_NEGATIVE if fused
            else attention_masks.SOFTMAX_LARGE_NEGATIVE, zero_masked=not fused)
        weights = (probabilities if self._dropout_op is None
                   else apply(self._dropout_op, probabilities))
        output = self.output_dense(ops.einsum("acbe,aecd->abcd", weights, v))
        self._returns_scores = bool(return_attention_scores)
        if return_attention_scores:
            return output, probabilities
        return output

    def compute_mask(self, inputs, previous_mask):
        """The query's mask on the output (not on the scores), as Keras."""
        return [previous_mask, None] if self._returns_scores else previous_mask

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        if self._output_shape:
            return (*tuple(query_shape)[:-1], *self._output_shape)
        return tuple(query_shape)

    def get_config(self):
        config = {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                  "value_dim": self.value_dim, "dropout": self.dropout,
                  "use_bias": self.use_bias, "use_gate": False,
                  "output_shape": self._output_shape, "attention_axes": self._attention_axes,
                  "sliding_window": None, **self.projection_config(), "seed": self.seed}
        return config

