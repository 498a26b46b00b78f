"""kiln.keras: the Keras API on kiln's engine.

    from kiln import keras
    from kiln.keras.models import Sequential
    from kiln.keras.layers import Conv2D, Dense
"""

from . import (
               activations,
               backend,
               callbacks,
               constraints,
               datasets,
               distribution,
               initializers,
               layers,
               losses,
               metrics,
               mixed_precision,
               models,
               ops,
               optimizers,
               preprocessing,
               random,
               regularizers,
               saving,
               utils,
               wrappers,
)
from .layers import Input
from .models import Model, Sequential
from .variables import Variable


def __getattr__(name):
    # keras.applications is imported on first use: it builds models from everything above,
    # and nothing imports it, so importing kiln.keras stays as it was
    if name == "applications":
        import importlib

        return importlib.import_module(f"{__name__}.applications")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["activations", "applications", "backend", "callbacks", "constraints", "datasets",
           "distribution", "initializers", "layers", "losses", "metrics", "mixed_precision",
           "models", "ops", "optimizers", "preprocessing", "random", "regularizers", "saving",
           "utils", "wrappers",
           "Input", "Model", "Sequential", "Variable"]
