"""MonitorCallback: what EarlyStopping, ModelCheckpoint and ReduceLROnPlateau share.

Each watches one logged quantity and asks "is this value an improvement?". Two things make that
harder than a dict lookup, and both are solved once here:

- Spellings. Keras 2 scripts log and monitor `acc` / `val_acc`, Keras 3 ones `accuracy` /
  `val_accuracy`, and a script written for one spelling meets models compiled with the other;
  Keras 2 logged the learning rate as `lr`, Keras 3 as `learning_rate`. A monitor finds its
  value under either spelling. A monitor found under neither warns once per `fit`, as Keras's
  (deduplicated) warning does, and the callback does nothing for that epoch.
- Direction. With `mode="auto"` Keras 3 asks the compiled metric whether it should go up or
  down (`_direction`); kiln does the same when the model's metrics say so, and otherwise knows
  the directions of the standard metric names. A name with no known direction raises Keras's
  ValueError asking for `mode="min"` or `"max"`, at the first epoch end, as Keras does.
"""

import warnings

from ..saving.saveable_paths import to_snake_case
from .callback import Callback

# Names whose spellings differ between Keras 2 and Keras 3 logs (without the "val_" prefix).
_ALIASES = {"acc": "accuracy", "accuracy": "acc", "lr": "learning_rate", "learning_rate": "lr"}

# Standard metric names (without "val_") that are better when larger; every loss and error
# metric is better when smaller.
_INCREASING = ("acc", "accuracy", "auc", "precision", "recall", "f1_score", "fbeta_score",
               "iou", "r2_score", "cosine_similarity", "specificity", "sensitivity")
_DECREASING = ("loss", "error", "crossentropy", "mse", "mae", "mape", "msle", "rmse", "hinge",
               "divergence", "kld", "poisson", "logcosh", "log_cosh", "huber")


def alias(name):
    """The other spelling of a logged name ("val_acc" -> "val_accuracy"), or None."""
    prefix = "val_" if name.startswith("val_") else ""
    other = _ALIASES.get(name.removeprefix(prefix))
    return prefix + other if other else None


def with_aliases(logs):
    """`logs` plus every missing alternative spelling (for formatting file names)."""
    extended = dict(logs or {})
    for name, value in (logs or {}).items():
        other = alias(name)
        if other and other not in extended:
            extended[other] = value
    return extended


def known_direction(metric_name):
    """"max", "min" or None for a metric name without the "val_" prefix."""
    if metric_name == "loss" or metric_name.endswith("loss"):
        return "min"
    if any(metric_name == part or metric_name.endswith(part) for part in _INCREASING):
        return "max"
    if any(part in metric_name for part in _DECREASING):
        return "min"
    return None


class MonitorCallback(Callback):
    """Base class: watches `monitor` and decides improvements as Keras 3 does.

    Args:
        monitor: Logged quantity to watch ("val_loss"); either Keras spelling is found.
        mode: "auto", "min" or "max"; an unknown mode warns and falls back to "auto".
        baseline: Initial best value (None: the first value seen).
        min_delta: Smallest change that counts as an improvement (its sign is ignored).
    """

    # The warning when the monitor is missing from the logs; subclasses word it as Keras.
    _missing_message = "{cls} is conditioned on metric `{monitor}` which is not available. " \
                       "Available metrics are: {available}."

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(f"{type(self).__name__} mode '{mode}' is unknown, fallback to auto "
                          "mode.", stacklevel=3)
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op = None
        self._warned_missing = False

    def _set_monitor_op(self):
        """Resolves the direction; called at the first epoch end, once metrics exist."""
        direction = self.mode if self.mode != "auto" else self._auto_direction()
        if direction is None:
            raise ValueError(
                f"{type(self).__name__} callback received monitor={self.monitor}, but Keras "
                "isn't able to automatically determine whether that metric should be "
                "maximized or minimized. Pass `mode='max'` in order to monitor based on the "
                "highest metric value, or pass `mode='min'` in order to use the lowest value.")
        self.monitor_op = _greater if direction == "max" else _less
        if direction == "min":
            self.min_delta = -abs(self.min_delta)

    def _auto_direction(self):
        metric_name = self.monitor.removeprefix("val_")
        if metric_name == "loss":
            return "min"
        names = {metric_name, _ALIASES.get(metric_name)}
        for log_name, metric in _logged_metrics(self.model):
            if log_name not in names:
                continue
            # the metric says (Keras's `_direction`), or its class does: a Precision
            # named "p" still goes up
            direction = getattr(metric, "_direction", None)
            if direction in ("up", "down"):
                return "max" if direction == "up" else "min"
            by_class = known_direction(to_snake_case(type(metric).__name__))
            if by_class is not None:
                return by_class
        return known_direction(metric_name)

    def _is_improvement(self, monitor_value, reference_value):
        if reference_value is None:
            return True
        return self.monitor_op(monitor_value - self.min_delta, reference_value)

    def get_monitor_value(self, logs):
        """The monitored value in `logs` under either spelling, or None (warning once)."""
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None and alias(self.monitor) is not None:
            value = logs.get(alias(self.monitor))
        if value is None and not self._warned_missing:
            self._warned_missing = True
            warnings.warn(self._missing_message.format(
                cls=type(self).__name__, monitor=self.monitor, available=",".join(logs)),
                stacklevel=3)
        return value

    def on_train_begin(self, logs=None):
        self._warned_missing = False


def _logged_metrics(model):
    """(log name, metric object) pairs of the compiled model: kiln's compile entries (their
    names are the logged ones, suffixes and output prefixes included), then whatever
    `model.metrics` lists, as Keras looks there."""
    pairs = []
    compiled = getattr(model, "_compile_metrics", None)
    for entry in getattr(compiled, "entries", None) or ():
        pairs.append((entry[0], entry[1]))
    for metric in getattr(model, "metrics", None) or ():
        for inner in getattr(metric, "metrics", None) or [metric]:
            pairs.append((getattr(inner, "name", None), inner))
    return pairs


def _less(a, b):
    return a < b


def _greater(a, b):
    return a > b
