"""keras-io's "Text classification with Transformer" layers, TokenAndPositionEmbedding and
TransformerBlock, as written there (at small sizes), against real Keras 3 from the same
weights: the position Embedding called on `ops.arange(0, maxlen, 1)` inside call() is the
table itself added to the token embeddings (a broadcast operand of the plan that trains).

Two training steps, because the second one once differed: the kernels MultiHeadAttention's
projections read transposed in backward were views made before the weights moved into their
arena, so every step after the first read the initial weights
(tests/plan/test_parameters.py).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from keras_oracle import check_against_keras  # noqa: E402

from kiln import keras as kk  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("kiln_keras_env"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword"
                               ":DeprecationWarning"),
]


def transformer_classifier(K, maxlen=6, vocab_size=30, embed_dim=8, num_heads=2, ff_dim=8):
    """keras-io's TokenAndPositionEmbedding and TransformerBlock as written there (dropout rate
    0, so the training forward is deterministic and comparable), at small sizes."""
    layers, ops = K.layers, K.ops

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = K.Sequential([layers.Dense(ff_dim, activation="relu"),
                                     layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = layers.Dropout(rate)
            self.dropout2 = layers.Dropout(rate)

        def call(self, inputs):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output)
            return self.layernorm2(out1 + ffn_output)

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            maxlen = ops.shape(x)[-1]
            positions = ops.arange(start=0, stop=maxlen, step=1)
            positions = self.pos_emb(positions)
            x = self.token_emb(x)
            return x + positions

    inputs = layers.Input(shape=(maxlen,))
    x = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)(inputs)
    x = TransformerBlock(embed_dim, num_heads, ff_dim, rate=0.0)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dense(5, activation="relu")(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return K.Model(inputs=inputs, outputs=outputs)


def test_token_and_position_embedding_with_a_transformer_block_trains_as_keras():
    ids = np.random.default_rng(3).integers(0, 30, (6, 6)).astype(np.float32)
    check_against_keras(transformer_classifier, inputs=ids, optimizers=("adam",), steps=2)
    kk.backend.clear_session()  # automatic names count from 0 again
    paths = [w.path for w in transformer_classifier(kk).weights]
    assert paths[:2] == ["embedding/embeddings", "embedding_1/embeddings"]


