"""Attention masks inside a model, as Keras 3 combines and applies them: the helpers live
with keras.ops.dot_product_attention (keras/ops/attention.py), which the layers share."""

from ..ops.attention import (  # noqa: F401 (the attention layers' names for them)
    FUSED_LARGE_NEGATIVE,
    SOFTMAX_LARGE_NEGATIVE,
    as_bool,
    causal_triangle,
    combine,
    masked_softmax,
)
