"""Dense layer (`keras.layers.Dense`)."""

from ... import ops
from .. import activations, initializers
from .base_layer import Layer, is_integer


class Dense(Layer):
    """Fully connected layer: oneDNN inner product with bias and activation fused.

    After Flatten it reads the 4D activation directly (no reshape, no reorder); its kernel is
    still the Keras (features, units) matrix. On a sequence (batch, steps, features) or an
    image (batch, height, width, channels) it applies to the last axis, as Keras: (batch,
    steps, units), (batch, height, width, units).

    Args: units, activation, use_bias, kernel_initializer, bias_initializer,
    kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
    bias_constraint (penalties and constraints run in the step).
    """

    supports_masking = True  # the output carries the input's mask, as Keras

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None,
                 quantization_config=None, **kwargs):
        super().__init__(**kwargs)
        self.set_weight_regularization(kernel_regularizer, bias_regularizer, kernel_constraint,
                                       bias_constraint)
        if not is_integer(units) or units <= 0:
            raise ValueError(f"{self.context}: argument units must be a positive int, "
                             f"got {units!r}")
        for argument, value in (("lora_rank", lora_rank), ("lora_alpha", lora_alpha),
                                ("quantization_config", quantization_config)):
            if value is not None:
                raise ValueError(f"{self.context}: argument {argument} is not supported yet, "
                                 f"expected None, got {value!r}")
        self.units = int(units)
        self.activation, self.activation_function = activations.resolve(activation, self.context)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(
            kernel_initializer, self.context, "kernel_initializer")
        self.bias_initializer = initializers.get(
            bias_initializer, self.context, "bias_initializer")
        fused = self.activation if self.activation in ops.FUSABLE else None
        self.op = ops.DenseOp(self.name, units, fused, use_bias)

    def build(self, input_shape):
        if len(input_shape) not in (2, 3, 4):
            raise ValueError(f"{self.context}: expected a 2D input (batch, features), a 3D "
                             "sequence (batch, steps, features) or a 4D image, got shape "
                             f"{input_shape}")
        x = self._input_tensor
        if len(input_shape) == 4 and not x.flattened:  # per position, on the last axis
            self.op.image_format = x.data_format
        # after Flatten, bf16 reads the matrix view, f32 the 4D input (ops/dense.py)
        from ..mixed_precision import Policy

        self.op.flattened_as_matrix = Policy(self.policy_name).compute_dtype == "bfloat16"
        dims = self.op.parameter_dims(x.dims, x.data_format)
        self.add_kernel_and_bias((input_shape[-1], self.units), dims)

    def call(self, inputs):
        return self.apply_with_activation(self.op, inputs)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "activation": self.activation_config(),
                "use_bias": self.use_bias, **self.weight_regularization_config(),
                "quantization_config": None}
