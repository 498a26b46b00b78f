"""Reading and setting a model's learning rate from a callback.

`LearningRateScheduler` and `ReduceLROnPlateau` both change `model.optimizer.learning_rate`
between epochs and report it in the epoch logs. The optimizer's learning rate may be a float or
a variable-like object (`float()` reads it, assignment replaces it); both are handled here, with
an error naming the callback when the model has no optimizer to change.
"""


def optimizer_of(callback):
    optimizer = getattr(callback.model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError(f"{type(callback).__name__}: the model needs an optimizer with a "
                         "learning_rate attribute; call model.compile(optimizer=...) first")
    return optimizer


def get_learning_rate(callback):
    return float(optimizer_of(callback).learning_rate)


def set_learning_rate(callback, value):
    optimizer_of(callback).learning_rate = value
