"""ActivityRegularization layer (`keras.layers.ActivityRegularization`): its input unchanged,
plus `(l1 * sum|x| + l2 * sum x^2) / batch_size` added to the loss."""

import numbers

from ...graph.symbolic import apply
from ...ops.activity_regularization import ActivityRegularizationOp
from .base_layer import Layer


class ActivityRegularization(Layer):
    """Args: l1, l2 (floats >= 0, default 0)."""

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("l1", l1), ("l2", l2)):
            if not isinstance(value, numbers.Real) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{self.context}: argument {argument} must be a float >= 0, "
                                 f"got {value!r}")
        self.l1, self.l2 = float(l1), float(l2)
        self.op = ActivityRegularizationOp(self.name, self.l1, self.l2)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
