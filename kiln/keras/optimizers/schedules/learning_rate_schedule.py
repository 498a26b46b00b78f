"""Learning-rate schedules (`keras.optimizers.schedules`): Keras 3's six, same formulas,
argument names and configs (keras/src/optimizers/schedules/learning_rate_schedule.py).

A schedule maps the optimizer's iteration count (steps taken so far) to a learning rate. kiln
evaluates it in Python once per step, before the fused update kernel, so a schedule costs
microseconds and never touches the arena. Values are computed in float64 and returned as
float32, Keras's variable type.
"""

import math

import numpy as np


def _positive_steps(owner, argument, value):
    if not value > 0:
        raise ValueError(f"{owner}: argument {argument} must be > 0, got {value!r}")


class LearningRateSchedule:
    """Base class: subclasses define `__call__(step)` and `get_config()`."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  "override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ^ (step / decay_steps) (the exponent floored when
    staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        _positive_steps("ExponentialDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        p = np.asarray(step, np.float64) / self.decay_steps
        if self.staircase:
            p = np.floor(p)
        return np.float32(self.initial_learning_rate * np.power(self.decay_rate, p))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] up to and including boundaries[0], values[1] up to boundaries[1], ...,
    values[-1] after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "PiecewiseConstantDecay: the length of boundaries should be 1 less than the "
                f"length of values. Received: boundaries={boundaries} of length "
                f"{len(boundaries)}, and values={values} of length {len(values)}.")
        self.boundaries = boundaries
        self.values = values
        self.name = name

    def __call__(self, step):
        # the first boundary >= step picks the value (step == boundary keeps the earlier one)
        index = int(np.searchsorted(np.asarray(self.boundaries), step, side="left"))
        return np.float32(self.values[index])

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ^ power + end, step capped at decay_steps;
    with cycle, decay_steps grows to the first multiple of itself above the step."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name="PolynomialDecay"):
        _positive_steps("PolynomialDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        step = float(step)
        decay_steps = float(self.decay_steps)
        if self.cycle:
            decay_steps *= 1.0 if step == 0 else math.ceil(step / self.decay_steps)
        else:
            step = min(step, decay_steps)
        p = step / decay_steps
        return np.float32((self.initial_learning_rate - self.end_learning_rate)
                          * (1.0 - p) ** self.power + self.end_learning_rate)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps) (the fraction floored
    when staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        _positive_steps("InverseTimeDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        p = float(step) / self.decay_steps
        if self.staircase:
            p = math.floor(p)
        return np.float32(self.initial_learning_rate / (1.0 + self.decay_rate * p))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


def _cosine(fraction, alpha):
    return (1.0 - alpha) * 0.5 * (1.0 + math.cos(math.pi * fraction)) + alpha


class CosineDecay(LearningRateSchedule):
    """Optionally a linear warm-up from initial_learning_rate to warmup_target over
    warmup_steps, then a cosine from the peak down to alpha * peak over decay_steps."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        _positive_steps("CosineDecay", "decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_steps = warmup_steps
        self.warmup_target = warmup_target

    def __call__(self, step):
        step = float(step)
        if self.warmup_target is None:
            step = min(step, self.decay_steps)
            return np.float32(self.initial_learning_rate
                              * _cosine(step / self.decay_steps, self.alpha))
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            delta = self.warmup_target - self.initial_learning_rate
            return np.float32(delta * step / self.warmup_steps + self.initial_learning_rate)
        fraction = (step - self.warmup_steps) / self.decay_steps
        return np.float32(self.warmup_target * _cosine(fraction, self.alpha))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul^i
    steps and peaks at initial_learning_rate * m_mul^i."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0,
                 alpha=0.0, name="SGDRDecay"):
        _positive_steps("CosineDecayRestarts", "first_decay_steps", first_decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        fraction = float(step) / self.first_decay_steps
        t_mul = float(self._t_mul)
        if t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:
            restart = math.floor(math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            done = (1.0 - t_mul ** restart) / (1.0 - t_mul)
            fraction = (fraction - done) / t_mul ** restart
        peak = self._m_mul ** restart
        cosine = 0.5 * peak * (1.0 + math.cos(math.pi * fraction))
        return np.float32(self.initial_learning_rate
                          * ((1.0 - self.alpha) * cosine + self.alpha))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "first_decay_steps": self.first_decay_steps, "t_mul": self._t_mul,
                "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}
