"""Embedding layer (`keras.layers.Embedding`): token ids -> rows of a learned table."""

import warnings

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply, tracing
from ...ops.embedding import EmbeddingOp
from ...ops.masks import StepMaskOp
from .. import constraints, initializers, regularizers
from .arguments import is_integer
from .base_layer import Layer


class Embedding(Layer):
    """Turns (batch, steps) token ids into (batch, steps, output_dim) vectors: row `id` of the
    weight `embeddings` of shape (input_dim, output_dim). Float ids are truncated to ints, as
    Keras casts them; ids outside [0, input_dim) fed to fit / evaluate / predict are an error
    naming this layer, raised before the step.

    Args: input_dim (vocabulary size), output_dim, embeddings_initializer (default 'uniform':
    uniform in [-0.05, 0.05]), embeddings_regularizer, embeddings_constraint, mask_zero (id 0
    is padding: the output carries a mask, id != 0, to the layers after it), weights (an
    initial table), input_length (Keras 2, ignored).
    """

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False,
                 weights=None, lora_rank=None, lora_alpha=None, quantization_config=None,
                 input_length=None, **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("input_dim", input_dim), ("output_dim", output_dim)):
            if not is_integer(value) or value <= 0:
                raise ValueError(f"{self.context}: argument {argument} must be a positive int, "
                                 f"got {value!r}")
        for argument, value in (("lora_rank", lora_rank), ("lora_alpha", lora_alpha),
                                ("quantization_config", quantization_config)):
            if value is not None:
                raise ValueError(f"{self.context}: argument {argument} is not supported yet, "
                                 f"expected None, got {value!r}")
        if input_length is not None:
            warnings.warn(f"{self.context}: argument input_length is deprecated (Keras 3 "
                          "ignores it); remove it", stacklevel=2)
        if input_length is not None and self.input_shape_arg is None:
            # Keras 2's Sequential took the input's shape from it
            self.input_shape_arg = (int(input_length),)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer, self.context,
                                                       "embeddings_initializer")
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer, self.context,
                                                       "embeddings_regularizer")
        self.embeddings_constraint = constraints.get(embeddings_constraint, self.context,
                                                     "embeddings_constraint")
        if mask_zero not in (True, False):
            raise ValueError(f"{self.context}: argument mask_zero must be True or False, got "
                             f"{mask_zero!r}")
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.op = EmbeddingOp(self.name, self.input_dim, self.output_dim)
        self.mask_op = StepMaskOp(f"{self.name}/mask", 0)
        self._initial_weights = weights

    @property
    def index_limit(self):
        """The ids this layer reads are in [0, index_limit): the data adapters check them."""
        return self.input_dim

    def __call__(self, *args, **kwargs):
        if tracing and args and not isinstance(args[0], SymbolicTensor):
            return self._rows_of_constant_ids(args[0])
        return super().__call__(*args, **kwargs)

    def _rows_of_constant_ids(self, ids):
        """Called on constant ids inside another layer's call() (keras-io's
        TokenAndPositionEmbedding: `self.pos_emb(ops.arange(0, maxlen, 1))`): the rows are
        the table itself when the ids are every row in order, so the weight is returned and
        the arithmetic that meets a tensor reads it as its broadcast operand (and trains it),
        as the gather Keras runs would."""
        array = np.asarray(ids)
        if array.dtype.kind not in "iu" or array.ndim != 1:
            raise TypeError(f"{self.context}: argument inputs must be a 1-D array of int ids "
                            f"when the layer is called on constants inside a model, got "
                            f"dtype {array.dtype} and shape {array.shape}")
        if array.size and (array.min() < 0 or array.max() >= self.input_dim):
            raise ValueError(f"{self.context}: argument inputs holds ids outside [0, "
                             f"{self.input_dim}) (input_dim): {int(array.min())} to "
                             f"{int(array.max())}")
        if not self.built:
            self.build(None)
            self.built = True
        if not np.array_equal(array, np.arange(self.input_dim)):
            raise NotImplementedError(
                f"{self.context}: called on constant ids inside a model, only all the table's "
                f"rows in order (ops.arange(0, {self.input_dim})) are supported yet, got ids "
                f"of shape {array.shape} from {int(array.min())} to {int(array.max())}")
        self.embeddings.custom = True  # read with the dims of the arithmetic it meets
        return self.embeddings

    def build(self, input_shape=None):
        if input_shape is not None and len(input_shape) != 2:
            raise ValueError(f"{self.context}: expected a 2D input (batch, steps) of token "
                             f"ids, got shape {input_shape}")
        dims, tag = self.op.parameter_dims(None)["embeddings"]
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self.embeddings_initializer, dims, tag,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        if self._initial_weights is not None:
            weights = self._initial_weights
            if not (isinstance(weights, list) and len(weights) == 1):
                weights = [weights]
            self.set_weights([np.asarray(w, np.float32) for w in weights])
            self._initial_weights = None

    def call(self, inputs):
        return apply(self.op, inputs)

    def compute_mask(self, inputs, previous_mask=None):
        """With mask_zero, the (batch, steps) mask ids != 0, computed in the step."""
        if not self.mask_zero:
            return None
        return apply(self.mask_op, inputs)

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.output_dim)

    def get_config(self):
        serialize = ((regularizers.serialize, self.embeddings_regularizer),
                     (regularizers.serialize, self.activity_regularizer),
                     (constraints.serialize, self.embeddings_constraint))
        regularizer, activity, constraint = (None if value is None else function(value)
                                             for function, value in serialize)
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "embeddings_regularizer": regularizer, "activity_regularizer": activity,
                "embeddings_constraint": constraint, "mask_zero": self.mask_zero,
                "quantization_config": None}
