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

__all__ = ["activations", "backend", "callbacks", "constraints", "datasets", "distribution",
           "initializers", "layers", "losses", "metrics", "mixed_precision", "models", "ops",
           "optimizers", "preprocessing", "random", "regularizers", "saving", "utils", "wrappers",
           "Input", "Model", "Sequential", "Variable"]
