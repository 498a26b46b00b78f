"""`keras.optimizers.schedules`: learning rates that change with the step count."""

from .learning_rate_schedule import (
    CosineDecay,
    CosineDecayRestarts,
    ExponentialDecay,
    InverseTimeDecay,
    LearningRateSchedule,
    PiecewiseConstantDecay,
    PolynomialDecay,
)

ALL_SCHEDULES = {cls.__name__: cls for cls in (
    ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay, CosineDecay,
    CosineDecayRestarts)}


def serialize(learning_rate_schedule):
    """The schedule as Keras 3 writes it: {"module", "class_name", "config", ...}."""
    return {"module": "keras.optimizers.schedules",
            "class_name": type(learning_rate_schedule).__name__,
            "config": learning_rate_schedule.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A schedule from serialize()'s dict (or Keras 2's {"class_name", "config"})."""
    known = {**ALL_SCHEDULES, **(custom_objects or {})}
    name = config.get("class_name") if isinstance(config, dict) else None
    if name not in known:
        raise ValueError(f"schedules.deserialize: unknown learning rate schedule {name!r}; "
                         f"expected one of {sorted(known)}")
    return known[name].from_config(dict(config.get("config", {})))


__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "PolynomialDecay", "InverseTimeDecay", "CosineDecay", "CosineDecayRestarts",
           "serialize", "deserialize"]
