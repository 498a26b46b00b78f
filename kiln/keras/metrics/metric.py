"""Metric base (`keras.metrics.Metric`): a state the step accumulates and a result.

A metric's state is a float64 numpy array it owns. In fit / evaluate a plan adds a kernel that
adds each batch into that array (`plan_update`), reading the model output the loss head left
in a plain buffer; a metric without a kernel (a user function) is updated from the same
buffers after the step (`after_step`). `update_state` on numpy arrays does the same outside a
plan (users, tests). The array is reset in place: plans keep pointing at it.

A user's Metric subclass keeps its state in variables it makes with Keras 3's
`add_variable(shape, initializer, dtype, aggregation, name)` (or `add_weight`) and updates
them with keras.ops in `update_state`: in fit / evaluate that runs after each step on the
whole batch's outputs and labels (keras.ops are vectorised numpy there, one call per batch).

A metric updated with symbolic tensors while a `compute_loss` override is traced (Keras 3's
`self.kl_tracker.update_state(kl)`) records the call instead (`recording_updates`): the plan
computes those tensors in the step and the trainer runs the update on their values after it
(kiln/keras/models/model_metrics.py).
"""

import contextlib
import functools

import numpy as np

from ...graph.symbolic import SymbolicTensor, tracing
from ..variables import Variable

_recorders = []  # the lists recording symbolic update_state calls, innermost last


@contextlib.contextmanager
def recording_updates():
    """Record the update_state calls made on symbolic tensors inside the block: yields the
    list of (metric, args, kwargs) they append to."""
    updates = []
    _recorders.append(updates)
    try:
        yield updates
    finally:
        _recorders.pop()


def _recorded_when_symbolic(update_state):
    """`update_state` that records a call on symbolic tensors (see recording_updates)."""

    @functools.wraps(update_state)
    def update(self, *args, **kwargs):
        if not any(isinstance(value, SymbolicTensor) or getattr(type(value), "traced_value",
                                                                 False)
                   for value in (*args, *kwargs.values())):
            return update_state(self, *args, **kwargs)
        if not _recorders:
            where = tracing[-1] if tracing else "a model being built"
            raise TypeError(f"{where}: metric '{self.name}': update_state got a symbolic "
                            "tensor; kiln updates a metric from tensors of the step only "
                            "inside a compute_loss override (or compile(metrics=...))")
        _recorders[-1].append((self, args, kwargs))
        return None

    return update


def _to_snake(name):
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and not name[index - 1].isupper():
            out.append("_")
        out.append(char.lower())
    return "".join(out)


class Metric:
    """Args: name, dtype. Subclasses set `self.state` (float64 array) in __init__."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "update_state" in cls.__dict__:
            cls.update_state = _recorded_when_symbolic(cls.__dict__["update_state"])

    def __init__(self, name=None, dtype=None):
        self.name = name or _to_snake(type(self).__name__)
        self.dtype = dtype or "float32"
        self.state = np.zeros(2, dtype=np.float64)
        self._variables = []

    # -- a user's state (Keras 3's metric variables) --------------------------------------------
    def add_variable(self, shape, initializer, dtype=None, aggregation="sum", name=None):
        """A non-trainable state variable (keras.Variable) that reset_state() sets to 0."""
        if "_variables" not in self.__dict__:
            raise RuntimeError(f"metric {type(self).__name__}: call super().__init__() in "
                               "__init__ before add_variable()")
        variable = Variable(initializer=initializer, shape=shape, dtype=dtype or self.dtype,
                            trainable=False, aggregation=aggregation,
                            synchronization="on_read", name=name)
        self._variables.append(variable)
        return variable

    def add_weight(self, shape=(), initializer=None, dtype=None, name=None):
        """Keras 3's alias of add_variable (initializer None: zeros)."""
        return self.add_variable(shape=shape, initializer=initializer or "zeros",
                                 dtype=dtype, name=name)

    @property
    def variables(self):
        return list(self.__dict__.get("_variables", ()))

    def reset_state(self):
        self.state[...] = 0.0
        for variable in self.variables:  # as Keras: every variable back to zeros
            variable.assign(np.zeros(variable.shape, dtype=variable.dtype))

    def update_state(self, y_true, y_pred, sample_weight=None):
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        """As Keras 3's Metric.__call__: update_state(*args, **kwargs), then result() (the
        state keeps this data: a second call reports both)."""
        self.update_state(*args, **kwargs)
        return self.result()

    # -- in a plan ------------------------------------------------------------------------------
    def plan_update(self, builder, view, weights):
        """Add a kernel updating the state from a HeadView (outputs, labels) and the weights
        array to use (the sample weights, or ones) and return None; or return a function the
        trainer calls after each step of that plan (here: `after_step` on the buffers)."""
        return lambda: self.after_step(view, weights)

    def after_step(self, view, weights):
        """Update from a plan's buffers after a step (Python: for metrics without a kernel)."""
        if getattr(view, "pixels", False):  # rows per pixel: seen in the output's shape
            self.update_state(view.labels, view.keras_outputs, view.keras_weights(weights))
            return
        outputs = view.outputs
        if outputs is not None and outputs.shape != view.labels.shape \
                and outputs.size == view.labels.size:
            outputs = outputs.reshape(view.labels.shape)  # an image's rows in Keras order
        self.update_state(view.labels, outputs, None if weights is view.ones else weights)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"
