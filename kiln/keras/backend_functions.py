"""Keras 2's graph-level backend functions: the learning phase, K.in_train_phase, K.function
and K.gradients (reached through `kiln.keras.backend`).

kiln has no session graph: a model is compiled into one plan for fit and another for
predict. K.function([inputs], [outputs]) is therefore a model from those inputs to those
outputs (sharing the layers and weights), run by its inference plan on each call; its
learning phase input, if listed, must be fed 0 (test mode). K.gradients has no plan yet:
kiln computes gradients only inside fit's training step (of the compiled loss, with respect
to the trainable weights), so it refuses by name and says what is missing.
"""

import numpy as np

from ..graph.symbolic import SymbolicTensor, tracing


class LearningPhase(int):
    """Keras 2's learning-phase placeholder: an int (0, test mode, outside fit) that K.function
    recognizes among its inputs."""

    def __repr__(self):
        return f"<learning phase {int(self)}>"


_phase = [LearningPhase(0)]


def learning_phase():
    """The learning phase (0 unless set_learning_phase(1) was called); fit trains with the
    training-mode graph whatever it is."""
    return _phase[0]


def set_learning_phase(value):
    if value not in (0, 1):
        raise ValueError(f"set_learning_phase: argument value must be 0 or 1, got {value!r}")
    _phase[0] = LearningPhase(int(value))


def in_train_phase(x, alt, training=None):
    """x in training, alt otherwise (either may be a function of no arguments). Inside a
    layer's call() `training` must be given (the layer's own `training` argument): kiln
    traces one graph for fit and predict, and checks that call() computes the same ops for
    both."""
    if training is None:
        if tracing:
            raise NotImplementedError(
                f"{tracing[-1]}: K.in_train_phase without training= inside a model: kiln has "
                "no learning-phase placeholder; pass the layer's call(training) argument")
        training = learning_phase()
    if isinstance(training, SymbolicTensor):
        raise NotImplementedError("K.in_train_phase: argument training must be a Python bool "
                                  "or 0 / 1 in kiln, got a tensor")
    chosen = x if training else alt
    return chosen() if callable(chosen) else chosen


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


class Function:
    """`K.function(inputs, outputs)`: called with a list of arrays (one per input), returns
    the list of output arrays, computed by a model from the inputs to the outputs."""

    def __init__(self, inputs, outputs, updates=None, name=None):
        from .models.model import Model

        if updates:
            raise NotImplementedError("K.function: argument updates is not supported in kiln "
                                      "(weights change only in fit / train_on_batch)")
        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        self.single_output = not isinstance(outputs, (list, tuple))
        outputs = [outputs] if self.single_output else list(outputs)
        self.phase_positions = [i for i, x in enumerate(inputs) if isinstance(x, LearningPhase)]
        tensors = [x for x in inputs if not isinstance(x, LearningPhase)]
        for argument, values in (("inputs", tensors), ("outputs", outputs)):
            for value in values:
                if not isinstance(value, SymbolicTensor):
                    raise TypeError(f"K.function: argument {argument} must hold model tensors "
                                    f"(layer.input, layer.output), got "
                                    f"{type(value).__name__}")
        self.model = Model(tensors, outputs, name=name)

    def __call__(self, values):
        values = list(values) if isinstance(values, (list, tuple)) else [values]
        for position in self.phase_positions:
            if position < len(values) and values[position] not in (0, False):
                raise NotImplementedError(
                    "K.function: the learning phase input was fed 1 (training mode); kiln "
                    "runs a K.function with its inference plan (feed 0)")
        arrays = [np.asarray(v) for i, v in enumerate(values)
                  if i not in self.phase_positions]
        outputs = self.model.predict(arrays if len(arrays) > 1 else arrays[0],
                                     batch_size=len(arrays[0]), verbose=0)
        outputs = [outputs] if not isinstance(outputs, (list, tuple)) else list(outputs)
        return outputs[0] if self.single_output else outputs


def function(inputs, outputs, updates=None, name=None, **kwargs):
    return Function(inputs, outputs, updates=updates, name=name)


def gradients(loss, variables):
    """Refused: see the module docstring."""
    names = variables if isinstance(variables, (list, tuple)) else [variables]
    kinds = sorted({"model inputs" if isinstance(v, SymbolicTensor) else "weights"
                    for v in names})
    raise NotImplementedError(
        f"K.gradients: gradients of a tensor with respect to {' and '.join(kinds)} are not "
        "supported in kiln: its engine plans gradients only inside the training step (of "
        "the compiled loss, with respect to the trainable weights), and has no plan that "
        "returns the gradient of an arbitrary tensor or of a model's input (as the filter "
        "visualization and deep dream scripts need); train with compile / fit or "
        "train_on_batch instead")


__all__ = ["function", "gradients", "in_test_phase", "in_train_phase", "learning_phase",
           "set_learning_phase"]
