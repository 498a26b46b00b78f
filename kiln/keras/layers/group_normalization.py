"""GroupNormalization layer (`keras.layers.GroupNormalization`): the channels of `axis` split
into `groups`, each sample normalized per group over the group's channels and every other axis.
oneDNN has group normalization only from 3.3, so it runs as fused numba kernels
(kiln/ops/axis_normalization.py)."""

from ...graph.symbolic import apply
from ...ops import axis_normalization_kernels as kernels
from ...ops.axis_normalization import AxisNormalizationOp, group_view
from .. import constraints, initializers, regularizers
from .arguments import is_integer, positive_axes
from .base_layer import Layer


class GroupNormalization(Layer):
    """Args (Keras 3 names and defaults):
        groups: 32; -1 for one group per channel (instance normalization). It must divide
            the channels.
        axis: the channel axis (-1).
        epsilon: 1e-3; center (beta), scale (gamma): True, one value per channel.
        beta_initializer 'zeros', gamma_initializer 'ones', beta_regularizer,
        gamma_regularizer, beta_constraint, gamma_constraint: as in Keras.
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        if not is_integer(groups) or (groups <= 0 and groups != -1):
            raise ValueError(f"{self.context}: argument groups must be a positive int (or -1 "
                             f"for instance normalization), got {groups!r}")
        if not is_integer(axis):
            raise ValueError(f"{self.context}: argument axis must be an int (the channel "
                             f"axis), got {axis!r}")
        if not epsilon >= 0:
            raise ValueError(f"{self.context}: argument epsilon must be a non-negative float, "
                             f"got {epsilon!r}")
        self.groups, self.axis, self.epsilon = int(groups), int(axis), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
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
        channel_axis, = positive_axes(self.axis, input_shape, self.context)
        channels = input_shape[channel_axis]
        if self.groups == -1:
            self.groups = channels
        if self.groups > channels or channels % self.groups:
            raise ValueError(f"{self.context}: argument groups must divide the {channels} "
                             f"channels of axis {self.axis} (input shape "
                             f"{tuple(input_shape)}), got {self.groups}")
        groups = self.groups
        self.op = AxisNormalizationOp(
            self.name, "GroupNormalization",
            lambda shape: group_view(shape, channel_axis, groups), kernels.CENTERED,
            self.epsilon, ("gamma" if self.scale else None, "beta" if self.center else None),
            tensor.data_format, tensor.flattened)
        parameters = self.op.parameter_dims(tensor.dims)
        if self.scale:
            self.gamma = self.add_weight("gamma", (channels,), self.gamma_initializer,
                                         *parameters["gamma"], regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", (channels,), self.beta_initializer,
                                        *parameters["beta"], regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)

    def call(self, inputs):
        return apply(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "groups": self.groups, "axis": self.axis,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                **{key: initializers.serialize(getattr(self, key))
                   for key in ("beta_initializer", "gamma_initializer")},
                **{key: None if getattr(self, key) is None
                   else regularizers.serialize(getattr(self, key))
                   for key in ("beta_regularizer", "gamma_regularizer")},
                **{key: None if getattr(self, key) is None
                   else constraints.serialize(getattr(self, key))
                   for key in ("beta_constraint", "gamma_constraint")}}
