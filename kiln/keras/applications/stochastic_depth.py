"""StochasticDepth: ConvNeXt's batch-wise drop of a residual branch, as Keras 3 defines it in
keras/src/applications/convnext.py (not a keras.layers layer). Registered under Keras's name
so a saved ConvNeXt config loads. In training each sample's branch is kept with probability
1 - drop_path_rate and scaled by its inverse (Keras: floor(keep + uniform) / keep); the
planned per-sample dropout kernel draws the mask (EfficientNet's Dropout with noise_shape
(None, 1, 1, 1) is the same operation)."""

from ...graph.symbolic import apply
from ...ops.noise import BroadcastDropoutOp
from .. import initializers
from ..layers.base_layer import Layer
from ..saving.serialization import register_keras_class


class StochasticDepth(Layer):
    """Args: drop_path_rate (float in [0, 1): the probability of dropping a sample's path)."""

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        if isinstance(drop_path_rate, bool) or not isinstance(drop_path_rate, (int, float)) or (
                not 0 <= drop_path_rate < 1):
            raise ValueError(f"{self.context}: argument drop_path_rate must be a float in "
                             f"[0, 1), got {drop_path_rate!r}")
        self.drop_path_rate = drop_path_rate
        self.op = BroadcastDropoutOp(self.name, float(drop_path_rate),
                                     int(initializers._generator[0].integers(0, 2**62)), (0,))

    def call(self, x):
        return apply(self.op, x)

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


register_keras_class(StochasticDepth, "keras.src.applications.convnext")
