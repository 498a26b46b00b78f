"""LayerNormalization layer (`keras.layers.LayerNormalization`).

Over the last axes (axis=-1, or a list of trailing axes) it runs on oneDNN's layer
normalization primitive (kiln/ops/layer_norm.py); over other axes, and with Keras's deprecated
`rms_scaling`, as fused numba kernels (kiln/ops/axis_normalization.py).
"""

import warnings

from ...graph.symbolic import apply
from ...ops.layer_norm import layer_norm_op
from .. import constraints, initializers, regularizers
from .arguments import axis_argument, positive_axes
from .base_layer import Layer


class LayerNormalization(Layer):
    """y = gamma * (x - mean) / sqrt(variance + epsilon) + beta, the statistics of each sample
    over `axis`.

    Args (Keras 3 names and defaults):
        axis: an int or a list of ints (default -1); gamma and beta have the shape of those
            axes. kiln needs them consecutive (not the batch axis).
        epsilon: 1e-3; center (beta), scale (gamma): True.
        beta_initializer 'zeros', gamma_initializer 'ones', beta_regularizer,
        gamma_regularizer, beta_constraint, gamma_constraint: as in Keras.
        rms_scaling: Keras 3's deprecated flag: y = x * gamma / sqrt(variance + epsilon),
            no beta (Keras warns that it scales by the variance; RMSNormalization is the
            root-mean-square one).
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 rms_scaling=False, **kwargs):
        super().__init__(**kwargs)
        if rms_scaling:
            warnings.warn("You passed `rms_scaling=True`, which is deprecated. This argument "
                          "incorrectly scales the input by the variance, not the root mean "
                          "square. To correctly use RMS Normalization, please use "
                          "`keras.layers.RMSNormalization` instead.", stacklevel=2)
        self.axis = axis_argument(axis, self.context)
        if not epsilon >= 0:
            raise ValueError(f"{self.context}: argument epsilon must be a non-negative float, "
                             f"got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.center, self.scale, self.rms_scaling = bool(center), bool(scale), bool(rms_scaling)
        for argument, value in (("beta_initializer", beta_initializer),
                                ("gamma_initializer", gamma_initializer)):
            setattr(self, argument, initializers.get(value, self.context, argument))
        for argument, value in (("beta_regularizer", beta_regularizer),
                                ("gamma_regularizer", gamma_regularizer)):
            setattr(self, argument, regularizers.get(value, self.context, argument))
        for argument, value in (("beta_constraint", beta_constraint),
                                ("gamma_constraint", gamma_constraint)):
            setattr(self, argument, constraints.get(value, self.context, argument))
        self.op = None

    def build(self, input_shape):
        tensor = self._input_tensor
        axes = positive_axes(self.axis, input_shape, self.context)
        # Keras keeps the axes as a sorted list once built (its config shows that list)
        self.axis = sorted(self.axis) if isinstance(self.axis, list) else [self.axis]
        shape = tuple(input_shape[axis] for axis in self.axis)
        self.op = layer_norm_op(self.name, axes, self.epsilon, self.center, self.scale,
                                self.rms_scaling, tensor.data_format, tensor.flattened,
                                len(input_shape))
        parameters = self.op.parameter_dims(tensor.dims)
        if "gamma" in parameters:
            self.gamma = self.add_weight("gamma", shape, self.gamma_initializer,
                                         *parameters["gamma"], regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if "beta" in parameters:
            self.beta = self.add_weight("beta", shape, self.beta_initializer,
                                        *parameters["beta"], regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale, "rms_scaling": self.rms_scaling,
                **{key: initializers.serialize(getattr(self, key))
                   for key in ("beta_initializer", "gamma_initializer")},
                **{key: None if getattr(self, key) is None
                   else regularizers.serialize(getattr(self, key))
                   for key in ("beta_regularizer", "gamma_regularizer")},
                **{key: None if getattr(self, key) is None
                   else constraints.serialize(getattr(self, key))
                   for key in ("beta_constraint", "gamma_constraint")}}
