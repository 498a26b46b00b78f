"""BatchNormalization layer (`keras.layers.BatchNormalization`).

Planned on oneDNN's batch-normalization primitive (kiln/ops/batch_norm.py): batch statistics in
training, the moving ones in evaluate/predict, and in training too when the layer is frozen
(`trainable=False`), as Keras 3 does. A following relu is fused into it when nothing else
reads the normalized tensor.
"""

import copy

from ... import ops
from ...graph.symbolic import apply
from ...ops.batch_norm_views import ChannelViewBatchNormOp
from ...ops.flatten import FlattenToMatrixOp
from ...ops.sync_batch_norm import SyncBatchNormOp
from .. import constraints, initializers, regularizers
from .base_layer import Layer, is_integer


class BatchNormalization(Layer):
    """Args (Keras 3 names and defaults):
        axis: the channel axis: -1 (the last: channels_last, (batch, features), (batch,
            steps, channels), 5D channels_last) or 1 (channels_first), on inputs of rank 2
            to 5.
        momentum: 0.99; epsilon: 1e-3; center (beta), scale (gamma): True.
        beta_initializer 'zeros', gamma_initializer 'ones', moving_mean_initializer 'zeros',
        moving_variance_initializer 'ones'.
        beta_regularizer, gamma_regularizer, beta_constraint, gamma_constraint: as in Keras.
        synchronized: False; True computes the batch statistics over the global batch of a
            data-parallel fit (every rank's shard), as Keras 3 (kiln/ops/sync_batch_norm.py);
            in one process it changes nothing.
    Keras 2 arguments `fused` (an implementation choice) is accepted; renorm and virtual
    batches raise: kiln does not have them yet.

    Call arguments: training=False runs this call in inference mode (moving statistics).
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, synchronized=False, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, virtual_batch_size=None, adjustment=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.beta_regularizer = regularizers.get(beta_regularizer, self.context,
                                                 "beta_regularizer")
        self.gamma_regularizer = regularizers.get(gamma_regularizer, self.context,
                                                  "gamma_regularizer")
        self.beta_constraint = constraints.get(beta_constraint, self.context, "beta_constraint")
        self.gamma_constraint = constraints.get(gamma_constraint, self.context,
                                                "gamma_constraint")
        unsupported = {"renorm_clipping": renorm_clipping,
                       "virtual_batch_size": virtual_batch_size, "adjustment": adjustment}
        for argument, value in unsupported.items():
            if value is not None:
                raise ValueError(f"{self.context}: argument {argument} is not supported yet, "
                                 f"expected None, got {value!r}")
        for argument, value in (("renorm", renorm),):
            if value:
                raise ValueError(f"{self.context}: argument {argument} is not supported yet, "
                                 f"expected False, got {value!r}")
        if isinstance(axis, (list, tuple)) and len(axis) == 1:
            axis = axis[0]
        if not is_integer(axis):
            raise ValueError(f"{self.context}: argument axis must be the channel axis (-1 or "
                             f"1), got {axis!r}")
        self.axis = int(axis)
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(
            beta_initializer, self.context, "beta_initializer")
        self.gamma_initializer = initializers.get(
            gamma_initializer, self.context, "gamma_initializer")
        self.moving_mean_initializer = initializers.get(
            moving_mean_initializer, self.context, "moving_mean_initializer")
        self.moving_variance_initializer = initializers.get(
            moving_variance_initializer, self.context, "moving_variance_initializer")
        self.synchronized = bool(synchronized)
        kind = SyncBatchNormOp if self.synchronized else ops.BatchNormOp
        self.op = kind(self.name, self.epsilon, self.momentum, self.center, self.scale)
        # the op of calls made with training=False: always the moving statistics
        self._inference_op = copy.copy(self.op)
        self._inference_op.frozen = True

    def _channel_axis(self, tensor):
        """The channel axis (1 or rank - 1) of `tensor`; for a 4D input it fixes the data
        format. Keras normalizes over every other axis."""
        rank = len(tensor.shape)
        axis = self.axis + rank if self.axis < 0 else self.axis
        if rank in (2, 3, 5) and axis in (1, rank - 1):
            return axis
        if rank == 4 and axis in (1, 3):
            tensor.read_as("channels_first" if axis == 1 else "channels_last", self.context)
            return axis
        raise ValueError(f"{self.context}: argument axis must be the channel axis of the "
                         f"input of shape {tensor.shape} (-1 for the last axis, 1 for "
                         f"channels_first), got {self.axis}")

    def _op_for(self, op, tensor):
        """`op` (batch or moving statistics) as planned on `tensor`: a sequence or a 5D
        tensor through its 4D view (batch_norm_views.py)."""
        rank = len(tensor.shape)
        if rank in (3, 5):
            return ChannelViewBatchNormOp(op, 1 if self._channel_axis(tensor) == 1 else -1,
                                          rank)
        return op

    def build(self, input_shape):
        tensor = self._input_tensor
        channels = tensor.shape[self._channel_axis(tensor)]
        dims = tensor.dims
        if tensor.flattened:  # after Flatten: one statistic per feature, as Keras
            dims = FlattenToMatrixOp(self.name).output_dims(dims)
        op = self._op_for(self.op, tensor)
        parameters = op.parameter_dims(dims)
        state = op.state_dims(dims)
        if self.scale:
            self.gamma = self.add_weight("gamma", (channels,), self.gamma_initializer,
                                         *parameters["gamma"], regularizer=self.gamma_regularizer,
                                         constraint=self.gamma_constraint)
        if self.center:
            self.beta = self.add_weight("beta", (channels,), self.beta_initializer,
                                        *parameters["beta"], regularizer=self.beta_regularizer,
                                        constraint=self.beta_constraint)
        self.moving_mean = self.add_weight("moving_mean", (channels,),
                                           self.moving_mean_initializer,
                                           *state["moving_mean"], trainable=False)
        self.moving_variance = self.add_weight("moving_variance", (channels,),
                                               self.moving_variance_initializer,
                                               *state["moving_variance"], trainable=False)

    def call(self, inputs, training=None):
        self._channel_axis(inputs)
        if inputs.flattened:
            inputs = apply(FlattenToMatrixOp(f"{self.name}/features"), inputs, flattened=False)
        # training=True asks for batch statistics: that is what training plans use anyway
        op = self._inference_op if training is False else self.op
        return apply(self._op_for(op, inputs), inputs)

    def set_frozen(self, frozen):
        self.op.frozen = frozen

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "momentum": self.momentum,
                "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
                **{key: initializers.serialize(getattr(self, key)) for key in (
                    "beta_initializer", "gamma_initializer", "moving_mean_initializer",
                    "moving_variance_initializer")},
                **{key: None if value is None else serialize(value) for key, value, serialize in (
                    ("beta_regularizer", self.beta_regularizer, regularizers.serialize),
                    ("gamma_regularizer", self.gamma_regularizer, regularizers.serialize),
                    ("beta_constraint", self.beta_constraint, constraints.serialize),
                    ("gamma_constraint", self.gamma_constraint, constraints.serialize))},
                "synchronized": self.synchronized, "renorm": False, "renorm_clipping": None,
                "renorm_momentum": 0.99}
