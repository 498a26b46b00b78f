"""LearningRateScheduler: the learning rate of each epoch from a function of the epoch."""

import inspect

import numpy as np

from .callback import Callback
from .learning_rate import get_learning_rate, set_learning_rate


class LearningRateScheduler(Callback):
    """Sets the optimizer's learning rate at the start of every epoch.

    Args:
        schedule: `schedule(epoch, lr) -> new lr` (Keras 3, and Keras 2 since 2.2) or
            `schedule(epoch) -> new lr` (older Keras 2 scripts); `epoch` counts from 0 and
            `lr` is the current learning rate. It must return a float.
        verbose: 1 prints the rate set at each epoch.

    The epoch logs get `learning_rate` (Keras 3's name; a monitor or a file name pattern
    asking for Keras 2's `lr` finds it too).
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        learning_rate = self._scheduled(epoch)
        if not isinstance(learning_rate, (float, np.float32, np.float64)):
            raise ValueError("The output of the `schedule` function should be a float. "
                             f"Got: {learning_rate}")
        set_learning_rate(self, learning_rate)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{learning_rate}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = get_learning_rate(self)

    def _scheduled(self, epoch):
        current = get_learning_rate(self)
        takes_rate = _accepts_two_arguments(self.schedule)
        if takes_rate is None:
            # Keras's own test: try the two-argument form, fall back on a TypeError
            try:
                return self.schedule(epoch, current)
            except TypeError:
                return self.schedule(epoch)
        return self.schedule(epoch, current) if takes_rate else self.schedule(epoch)


def _accepts_two_arguments(function):
    """True / False when the signature tells, None when it cannot be read."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    positional = [p for p in parameters
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return True
    return len(positional) >= 2
