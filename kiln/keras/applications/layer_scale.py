"""LayerScale: ConvNeXt's learnt per-channel scale of a residual branch, as Keras 3 defines it
in keras/src/applications/convnext.py (not a keras.layers layer). Registered under Keras's
name so a saved ConvNeXt config loads; its weight is the unnamed `variable` of Keras's."""

from .. import initializers
from ..layers.base_layer import Layer
from ..saving.serialization import register_keras_class


class LayerScale(Layer):
    """x * gamma, gamma of shape (projection_dim,) on the last axis, initialized to
    `init_values` (Touvron et al., 2021).

    Args: init_values (float), projection_dim (int, the input's last axis)."""

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        if isinstance(projection_dim, bool) or not isinstance(projection_dim, int) or (
                projection_dim <= 0):
            raise ValueError(f"{self.context}: argument projection_dim must be a positive int, "
                             f"got {projection_dim!r}")
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        if input_shape[-1] != self.projection_dim:
            raise ValueError(f"{self.context}: argument projection_dim={self.projection_dim} "
                             f"must equal the last axis of the input of shape "
                             f"{tuple(input_shape)}")
        self.gamma = self.add_weight(shape=(self.projection_dim,),
                                     initializer=initializers.Constant(self.init_values),
                                     trainable=True)

    def call(self, x):
        return x * self.gamma

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values,
                "projection_dim": self.projection_dim}


register_keras_class(LayerScale, "keras.src.applications.convnext")
