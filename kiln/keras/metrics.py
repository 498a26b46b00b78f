"""Metrics (`keras.metrics`)."""

import numpy as np


def categorical_accuracy(y_true, y_pred):
    """1.0 where argmax(y_pred) == argmax(y_true), per sample."""
    return (np.argmax(y_true, axis=-1) == np.argmax(y_pred, axis=-1)).astype(np.float32)


ACCURACY_NAMES = {"accuracy": "accuracy", "acc": "acc",
                  "categorical_accuracy": "categorical_accuracy"}


def get_names(metrics):
    """The log names of compile(metrics=...); the engine computes categorical accuracy."""
    names = []
    for metric in metrics or ():
        name = metric if isinstance(metric, str) else getattr(metric, "__name__", None)
        if name not in ACCURACY_NAMES:
            raise ValueError(f"compile: argument metrics must contain only "
                             f"{sorted(ACCURACY_NAMES)}, got {metric!r}")
        names.append(ACCURACY_NAMES[name])
    return names
