"""AdditiveAttention layer (`keras.layers.AdditiveAttention`): Bahdanau-style attention,
Keras 3's `scores = sum(scale * tanh(query + key), -1)` with a trainable (dim,) scale
(use_scale, glorot_uniform as Keras); masks, softmax, dropout and the weighted sum of the
values are Attention's."""

from .. import ops
from .attention import Attention


class AdditiveAttention(Attention):
    """Args: use_scale (default True), dropout, seed. Call arguments: Attention's."""

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        kwargs.pop("score_mode", None)
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def build(self, input_shape):
        query, _, _ = self._checked_shapes(input_shape)
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(query[-1],),
                                         initializer="glorot_uniform")
        self._make_dropout()
        self.built = True

    def _calculate_scores(self, query, key):
        summed = ops.tanh(ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3)))
        if self.scale is not None:
            summed = ops.multiply(summed, self.scale)
        return ops.sum(summed, axis=-1)

    def get_config(self):
        config = super().get_config()
        del config["score_mode"]
        return config
