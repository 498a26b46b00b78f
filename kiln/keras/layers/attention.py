"""Attention layer (`keras.layers.Attention`): Luong-style dot-product attention, Keras 3's
computation written with keras.ops (AdditiveAttention: additive_attention.py).

    scores = query · keyᵀ (times `scale` with use_scale)             score_mode="dot"
           = concat_score_weight * sum(tanh(scale * (q + k)), -1)    score_mode="concat"
    scores - 1e9 where the value's mask (and the causal triangle) hide a step
    weights = softmax(scores), dropout while training
    output = weights · value, zeroed at the query's masked steps

Inside a model the products are batched matmuls ("bqd,bkd->bqk", "bqk,bkd->bqd"), the mask
arithmetic broadcast binary ops, the causal triangle a constant the plan holds.
"""

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.dropout import DropoutOp
from .. import initializers, ops
from .attention_masks import causal_triangle
from .base_layer import Layer

MASKED_SCORE_OFFSET = 1.0e9  # Keras subtracts it from the masked scores


class Attention(Layer):
    """Args: use_scale (a trainable scalar scale of the scores), score_mode ("dot" or
    "concat"), dropout (on the attention weights, while training), seed.

    Call arguments: inputs [query (B, Tq, dim), value (B, Tv, dim)] or [query, value, key];
    mask [query_mask, value_mask] (Keras masks reach it by themselves); training;
    return_attention_scores; use_causal_mask."""

    supports_masking = True  # the output carries the query's mask, as Keras

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"{self.context}: argument score_mode must be one of 'dot', "
                             f"'concat', got {score_mode!r}")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ValueError(f"{self.context}: argument dropout must be a float in [0, 1), "
                             f"got {dropout!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode
        self.dropout, self.seed = float(dropout), seed
        self.scale = self.concat_score_weight = None
        self._dropout_op = None

    def _checked_shapes(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or not 2 <= len(input_shape) <= 3 \
                or not all(isinstance(s, (list, tuple)) for s in input_shape):
            raise ValueError(f"{self.context}: must be called on a list of inputs [query, "
                             f"value] or [query, value, key], got input shape {input_shape}")
        query, value, *key = input_shape
        key = key[0] if key else value
        for argument, shape in (("query", query), ("value", value), ("key", key)):
            if len(shape) != 3:
                raise ValueError(f"{self.context}: {argument} must be a 3D tensor (batch, "
                                 f"steps, features), got shape {tuple(shape)}")
        if query[-1] != key[-1] or key[1] != value[1]:
            raise ValueError(f"{self.context}: query {tuple(query)} and key {tuple(key)} "
                             f"must have the same feature size, key and value {tuple(value)} "
                             "the same number of steps")
        return query, value, key

    def build(self, input_shape):
        self._checked_shapes(input_shape)
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(name="concat_score_weight", shape=(),
                                                       initializer="ones")
        self._make_dropout()
        self.built = True

    def _make_dropout(self):
        if self.dropout > 0:
            seed = self.seed
            if seed is None:
                seed = int(initializers._generator[0].integers(0, 2**62))
            self._dropout_op = DropoutOp(f"{self.name}/dropout", self.dropout, seed)

    def _calculate_scores(self, query, key):
        if self.score_mode == "dot":
            scores = ops.einsum("bqd,bkd->bqk", query, key)
            return scores if self.scale is None else ops.multiply(scores, self.scale)
        summed = ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3))
        if self.scale is not None:
            summed = ops.multiply(summed, self.scale)
        return ops.multiply(ops.sum(ops.tanh(summed), axis=-1), self.concat_score_weight)

    def call(self, inputs, mask=None, training=False, return_attention_scores=False,
             use_causal_mask=False):
        if not isinstance(inputs, (list, tuple)) or not all(
                isinstance(t, SymbolicTensor) for t in inputs):
            raise ValueError(f"{self.context}: must be called on a list of tensors [query, "
                             f"value] or [query, value, key], got {inputs!r}")
        self._checked_shapes([t.shape for t in inputs])
        query, value, *key = inputs
        key = key[0] if key else value
        query_mask, value_mask = (list(mask) + [None, None])[:2] if mask else (None, None)
        scores = self._calculate_scores(query, key)
        # Keras: scores - 1e9 where the value's mask or the causal triangle hide a step
        keep = None if value_mask is None else ops.expand_dims(value_mask, -2)
        if use_causal_mask:
            triangle = causal_triangle(query.shape[1], value.shape[1])
            keep = triangle if keep is None else ops.multiply(keep, triangle)
        if keep is not None:
            offset = (keep - 1.0) * MASKED_SCORE_OFFSET
            scores = ops.add(scores, offset)
        weights = ops.softmax(scores, axis=-1)
        if self._dropout_op is not None:
            weights = apply(self._dropout_op, weights)
        output = ops.einsum("bqk,bkd->bqd", weights, value)
        if query_mask is not None:
            output = ops.multiply(output, ops.expand_dims(query_mask, -1))
        self._returns_scores = bool(return_attention_scores)
        return (output, weights) if return_attention_scores else output

    def compute_mask(self, inputs, previous_mask):
        """The query's mask, on the output only."""
        query_mask = previous_mask[0] if isinstance(previous_mask, (list, tuple)) \
            else previous_mask
        return [query_mask, None] if getattr(self, "_returns_scores", False) else query_mask

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape[0])[:-1], input_shape[1][-1])

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode, "dropout": self.dropout, "seed": self.seed}
