"""Dropout layer (`keras.layers.Dropout`)."""

from ... import ops
from ...graph.symbolic import apply
from ...ops.noise import BroadcastDropoutOp
from ...ops.tensor import logical_dims
from .. import initializers
from .base_layer import Layer


class Dropout(Layer):
    """Zeroes a fraction `rate` of the inputs while training and scales the rest by
    1 / (1 - rate); does nothing in evaluate/predict.

    Args:
        rate: float in [0, 1).
        noise_shape: None (one draw per element), or a tuple as long as the input's shape
            whose entries are None (that axis of the input), the input's size there, or 1 (one
            draw shared along that axis): (None, 1, 1, 1) drops whole samples.
        seed: int for a reproducible mask sequence.
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(rate, (int, float)) or not 0 <= rate < 1:
            raise ValueError(f"{self.context}: argument rate must be a float in [0, 1), "
                             f"got {rate!r}")
        self.noise_shape = self._validate_noise_shape(noise_shape)
        self.rate, self.seed = float(rate), seed
        if seed is None:
            seed = int(initializers._generator[0].integers(0, 2**62))
        self._op_seed = seed
        self.op = ops.DropoutOp(self.name, self.rate, seed) if noise_shape is None else None

    def _validate_noise_shape(self, noise_shape):
        if noise_shape is None:
            return None
        try:
            shape = tuple(noise_shape)
        except TypeError:
            shape = None
        if shape is None or isinstance(noise_shape, str) or not all(
                d is None or (isinstance(d, int) and not isinstance(d, bool) and d > 0)
                for d in shape):
            raise ValueError(f"{self.context}: argument noise_shape must be a tuple of "
                             f"positive ints or None, got {noise_shape!r}")
        return shape

    def build(self, input_shape):
        if self.noise_shape is None:
            return
        shape = tuple(input_shape)
        if len(self.noise_shape) != len(shape):
            raise ValueError(f"{self.context}: argument noise_shape {self.noise_shape} must "
                             f"have one entry per axis of the input of shape {shape}")
        varying = []
        for axis, (noise, size) in enumerate(zip(self.noise_shape, shape, strict=True)):
            if noise is None or (noise != 1 and (size is None or noise == size)):
                varying.append(True)
            elif noise == 1:
                varying.append(False)
            else:
                raise ValueError(f"{self.context}: argument noise_shape {self.noise_shape}: "
                                 f"entry {axis} must be None, 1 or the input's size {size} "
                                 f"(input shape {shape})")
        self._varying = tuple(varying)

    def call(self, inputs):
        if self.op is None:
            # the Keras axes where the mask varies, as the engine's logical axes
            flags = logical_dims(self._varying, inputs.data_format)
            axes = tuple(i for i, flag in enumerate(flags) if flag)
            self.op = BroadcastDropoutOp(self.name, self.rate, self._op_seed, axes)
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed,
                "noise_shape": self.noise_shape}
