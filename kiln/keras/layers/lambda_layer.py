"""Lambda layer (`keras.layers.Lambda`): a function of the input, traced like a custom layer's
`call()` (it must compute with keras.ops to become part of the model).

Saving follows Keras 3: a Python lambda is written as its marshalled bytecode (base64), a
named function by its registered name. Loading a lambda runs code from the file, so it is
refused unless the user opts out of safe mode (`safe_mode=False` to load_model or
from_config), exactly as Keras refuses it.
"""

import base64
import inspect
import marshal
import types

from .base_layer import Layer

LAMBDA_REFUSED = (
    "Requested the deserialization of a `Lambda` layer whose `function` is a Python lambda. "
    "This carries a potential risk of arbitrary code execution and thus it is disallowed by "
    "default. If you trust the source of the artifact, you can override this error by "
    "passing `safe_mode=False` to the loading function")


def _is_lambda(function):
    return isinstance(function, types.LambdaType) and function.__name__ == "<lambda>"


def dump_lambda(function):
    """Keras's `python_utils.func_dump`: (base64 marshal of the code, defaults, closure)."""
    code = base64.encodebytes(marshal.dumps(function.__code__)).decode("ascii")
    closure = (tuple(cell.cell_contents for cell in function.__closure__)
               if function.__closure__ else None)
    return {"class_name": "__lambda__",
            "config": {"code": code, "defaults": function.__defaults__, "closure": closure}}


def load_lambda(config):
    """The function of a `dump_lambda` config: runs bytecode from the file (unsafe mode only).
    Its global names resolve to `keras` (kiln.keras), `ops` and `np`, as a user's module
    would typically have them."""
    import numpy as np

    from ... import keras
    from .. import ops

    code = marshal.loads(base64.decodebytes(config["code"].encode("ascii")))  # noqa: S302
    closure = config.get("closure")
    if closure is not None:
        closure = tuple(types.CellType(value) for value in closure)
    defaults = config.get("defaults")
    scope = {"keras": keras, "ops": ops, "np": np}
    return types.FunctionType(code, scope, code.co_name,
                              tuple(defaults) if defaults is not None else None, closure)


class Lambda(Layer):
    """Args:
        function: called as `function(inputs, **arguments)` (and `training=` when it takes
            that argument) on symbolic tensors; it must use keras.ops.
        output_shape: Keras's hint (a shape without the batch, or a function of the input
            shape); kiln traces the function, so it only answers compute_output_shape.
        mask: only None (kiln has no masking).
        arguments: keyword arguments passed to `function`.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if not callable(function):
            raise ValueError(f"{self.context}: argument function must be callable, got "
                             f"{function!r}")
        if mask is not None:
            raise ValueError(f"{self.context}: argument mask is not supported (kiln has no "
                             f"masking), expected None, got {mask!r}")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape = output_shape
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            parameters = {}
        self._takes_training = "training" in parameters

    def call(self, inputs, training=None):
        kwargs = dict(self.arguments)
        if self._takes_training:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape):
            return self._output_shape(input_shape)
        return (input_shape[0], *self._output_shape)

    # -- serialization ----------------------------------------------------------------------
    @staticmethod
    def _serialize_function(function):
        from ..saving.serialization import serialize_keras_object

        return dump_lambda(function) if _is_lambda(function) \
            else serialize_keras_object(function)

    def get_config(self):
        from ..saving.serialization import serialize_keras_object

        config = {"function": self._serialize_function(self.function)}
        if self._output_shape is not None:
            config["output_shape"] = (self._serialize_function(self._output_shape)
                                      if callable(self._output_shape)
                                      else self._output_shape)
        config["arguments"] = serialize_keras_object(self.arguments)
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config, custom_objects=None, safe_mode=None):
        """`safe_mode` None counts as True (fails closed, as Keras outside a loading scope)."""
        from ..saving.serialization import deserialize_keras_object

        config = dict(config)
        safe = safe_mode is not False

        def function(value):
            if isinstance(value, dict) and value.get("class_name") == "__lambda__":
                if safe:
                    raise ValueError(f"Lambda '{config.get('name')}': {LAMBDA_REFUSED}")
                return load_lambda(value["config"])
            return deserialize_keras_object(value, custom_objects=custom_objects)

        config["function"] = function(config["function"])
        if isinstance(config.get("output_shape"), dict):
            config["output_shape"] = function(config["output_shape"])
        elif isinstance(config.get("output_shape"), list):
            config["output_shape"] = tuple(config["output_shape"])
        arguments = config.get("arguments")
        if isinstance(arguments, dict) and "class_name" not in arguments:
            config["arguments"] = {key: deserialize_keras_object(
                value, custom_objects=custom_objects) for key, value in arguments.items()}
        return cls(**config)
