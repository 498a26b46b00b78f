"""Metric base (`keras.metrics.Metric`): a state the step accumulates and a result.

A metric's state is a float64 numpy array it owns. In fit / evaluate a plan adds a kernel that
adds each batch into that array (`plan_update`), reading the model output the loss head left
in a plain buffer; a metric without a kernel (a user function) is updated from the same
buffers after the step (`after_step`). `update_state` on numpy arrays does the same outside a
plan (users, tests). The array is reset in place: plans keep pointing at it.
"""

import numpy as np


def _to_snake(name):
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and not name[index - 1].isupper():
            out.append("_")
        out.append(char.lower())
    return "".join(out)


class Metric:
    """Args: name, dtype. Subclasses set `self.state` (float64 array) in __init__."""

    def __init__(self, name=None, dtype=None):
        self.name = name or _to_snake(type(self).__name__)
        self.dtype = dtype or "float32"
        self.state = np.zeros(2, dtype=np.float64)

    def reset_state(self):
        self.state[...] = 0.0

    def update_state(self, y_true, y_pred, sample_weight=None):
        raise NotImplementedError

    def result(self):
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Keras' stateless call: the result on this data alone."""
        saved = self.state.copy()
        self.reset_state()
        try:
            self.update_state(y_true, y_pred, sample_weight)
            return self.result()
        finally:
            self.state[...] = saved

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
