"""`keras.utils`: label and array helpers and the text progress bar (here), PyDataset /
Sequence, set_random_seed, get_file, image_dataset_from_directory, load_img / img_to_array /
array_to_img / save_img, pad_sequences and timeseries_dataset_from_array (one module each);
Keras 2's `data_utils` / `np_utils` paths."""

import numbers
import re
import sys
import time

import numpy as np

# Indirection so tests can drive `Progbar` with a fake clock.
_clock = time.monotonic

# The terminal styles Keras 3's progress bar draws with (bold, green, white, reset).
_BOLD, _GREEN, _WHITE, _RESET = "\x1b[1m", "\x1b[32m", "\x1b[37m", "\x1b[0m"
_ANSI_ESCAPE = re.compile("\x1b\\[[0-9;]*m")


def to_categorical(y, num_classes=None, dtype="float32"):
    """Converts a vector of class labels to a one-hot matrix.

    Args:
        y: Array-like of integer class labels, usually of shape `(N,)` or
            `(N, 1)`. A trailing axis of size 1 is dropped, like Keras.
            Floats are accepted only if they hold whole numbers.
        num_classes: Total number of classes. If `None`, it is inferred
            as `max(y) + 1`.
        dtype: Data type of the result.

    Returns:
        An array of shape `y.shape + (num_classes,)` (without the trailing
        size-1 axis), with a 1 at each label's index and 0 elsewhere.

    Raises:
        ValueError: If `y` holds non-integer, negative or out-of-range
            labels, or `num_classes` is not a positive integer.
    """
    labels = np.asarray(y)
    is_float = np.issubdtype(labels.dtype, np.floating)
    if not (is_float or labels.dtype == np.bool_
            or np.issubdtype(labels.dtype, np.integer)):
        raise ValueError(
            "to_categorical: argument y must contain integer class labels, "
            f"got an array of dtype {labels.dtype}"
        )
    if is_float:
        # Keras would silently truncate 1.5 to class 1; that hides bugs.
        is_whole = np.isfinite(labels) & (labels == np.round(labels))
        if not np.all(is_whole):
            raise ValueError(
                "to_categorical: argument y must contain integer class "
                f"labels, got {float(labels[~is_whole][0])!r}"
            )
    shape = labels.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    class_ids = labels.reshape(-1).astype(np.int64)

    if num_classes is None:
        if class_ids.size == 0:
            raise ValueError(
                "to_categorical: argument num_classes is required when y "
                "is empty"
            )
        num_classes = int(class_ids.max()) + 1
    elif (
        not isinstance(num_classes, numbers.Integral)
        or isinstance(num_classes, bool)
        or num_classes < 1
    ):
        raise ValueError(
            "to_categorical: argument num_classes must be a positive "
            f"integer, got {num_classes!r}"
        )
    out_of_range = (class_ids < 0) | (class_ids >= num_classes)
    if np.any(out_of_range):
        raise ValueError(
            "to_categorical: argument y must contain class labels in "
            f"[0, {num_classes}), got {class_ids[out_of_range][0]}"
        )

    categorical = np.zeros((class_ids.size, num_classes), dtype=dtype)
    categorical[np.arange(class_ids.size), class_ids] = 1
    return categorical.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    """Scales `x` to unit norm along `axis`.

    Args:
        x: Array-like to normalize.
        axis: Axis along which to compute norms.
        order: Norm order, as for `numpy.linalg.norm` (2 is Euclidean).

    Returns:
        A float array shaped like `x`. Slices with zero norm are returned
        unchanged rather than divided by zero, like Keras.
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.inexact):
        x = x.astype("float32")
    norm = np.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    norm[norm == 0] = 1
    return x / norm


def _format_value(value):
    """Formats a metric value like Keras: `%.4f`, or `%.4e` if tiny."""
    if not isinstance(value, (numbers.Number, np.ndarray, np.generic)):
        return str(value)
    value = float(np.mean(value))
    return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"


def _format_eta(seconds):
    if seconds > 3600:
        return "%d:%02d:%02d" % (seconds // 3600, seconds % 3600 // 60,
                                 seconds % 60)
    if seconds > 60:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def _format_time_per_unit(seconds, unit_name):
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit_name}"
    return f"{seconds * 1e6:.0f}us/{unit_name}"


class Progbar:
    """Displays a progress bar, like `keras.utils.Progbar`.

    With `verbose=1` on a terminal, one line is redrawn in place with
    `'\\r'` in Keras 3's format: `" 37/469 ━━━━━━━━━━━━━━━━━━━━ 12s 25ms/step
    - loss: 0.2345"`, i.e. the steps done, the bar, the ETA (the time since
    the start once finished) and the time per step (its inverse is the
    steps per second), with Keras's bold / green / white terminal styles.
    When the output is not a terminal (log file, pipe, CI), carriage returns
    would leave a mess, so like `verbose=2` it prints a single summary
    line once the target is reached: the seconds the epoch took and the
    time per step, e.g. `"469/469 - 12s - 25ms/step - loss: 0.2345"`.

    Args:
        target: Total number of steps expected, or `None` if unknown.
        width: Width of the bar in characters.
        verbose: 0 (silent), 1 (bar, or summary line if not a terminal)
            or 2 (summary line only).
        interval: Minimum number of seconds between two redraws.
        stateful_metrics: Names of metrics displayed as given instead of
            being averaged over the updates.
        unit_name: Name of a step in the time-per-step display.
        dynamic: Whether to redraw in place. `None` means only if the
            stream is a terminal.
        stream: Text stream to write to. `None` means `sys.stdout`, looked
            up at each write so redirections (e.g. pytest's capsys) work.
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05,
                 stateful_metrics=None, unit_name="step", dynamic=None,
                 stream=None):
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.stateful_metrics = set(stateful_metrics or ())
        self.unit_name = unit_name
        self.dynamic = dynamic
        self.stream = stream
        # name -> [weighted sum, total weight]; stateful: [value, 1].
        self._values = {}
        self._values_order = []
        self._seen_so_far = 0
        self._start = _clock()
        self._last_update = -float("inf")
        self._time_after_first_step = None
        self._prev_width = 0

    def update(self, current, values=None, finalize=None, weight=None):
        """Updates the progress bar.

        Args:
            current: Number of steps done so far.
            values: List of `(name, value)` pairs. Values of metrics not in
                `stateful_metrics` are displayed as their running mean.
            finalize: Whether this is the last update. `None` means
                `current >= target`.
            weight: Weight of `values` in the running means. `None` means
                the number of steps advanced (Keras' behaviour); pass the
                batch size to average per sample.
        """
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        if weight is None:
            weight = max(current - self._seen_so_far, 1)
        for name, value in values or ():
            if name not in self._values:
                self._values_order.append(name)
            if name in self.stateful_metrics:
                self._values[name] = [value, 1]
            else:
                total = self._values.setdefault(name, [0.0, 0])
                total[0] += float(np.mean(value)) * weight
                total[1] += weight
        self._seen_so_far = current

        now = _clock()
        time_per_unit = self._estimate_step_duration(current, now)
        if self.verbose == 1 and self._is_dynamic():
            if finalize or now - self._last_update >= self.interval:
                self._redraw(current, now, time_per_unit, finalize)
                self._last_update = now
        elif self.verbose in (1, 2) and finalize:
            target = "Unknown" if self.target is None else self.target
            count = f"{current}/{target}"
            self._write(
                f"{count} - {now - self._start:.0f}s - "
                f"{_format_time_per_unit(time_per_unit, self.unit_name)}"
                f"{self._metrics_text()}\n"
            )

    def add(self, n, values=None):
        """Advances the bar by `n` steps; see `update` for `values`."""
        self.update(self._seen_so_far + n, values)

    def _redraw(self, current, now, time_per_unit, finalize):
        """One in-place line in Keras 3's format: the bold step count, a bar of `━` (done in
        green, the rest in white), then the ETA while running or the elapsed time once done
        (bold), the time per step, and the metrics."""
        if self.target:
            digits = len(str(self.target))
            done = min(int(self.width * current / self.target), self.width)
            bar = f"{_BOLD}{current:{digits}d}/{self.target}{_RESET} "
            if done > 0:
                bar += f"{_GREEN}{'━' * done}{_RESET}"
            bar += f"{_WHITE}{'━' * (self.width - done)}{_RESET}"
        else:
            bar = f"{current:7d}/Unknown"
        if self.target and not finalize:
            info = f" {_BOLD}{_format_eta(time_per_unit * (self.target - current))}{_RESET}"
        else:
            info = f" {_BOLD}{now - self._start:.0f}s{_RESET}"
        info += f" {_format_time_per_unit(time_per_unit, self.unit_name)}"
        line = bar + info + self._metrics_text()
        # Blank out the tail of a longer previous line (escape codes take no columns).
        width = len(_ANSI_ESCAPE.sub("", line))
        padding = " " * max(self._prev_width - width, 0)
        self._prev_width = width
        self._write("\r" + line + padding + ("\n" if finalize else ""))

    def _metrics_text(self):
        text = ""
        for name in self._values_order:
            total, weight = self._values[name]
            value = total if name in self.stateful_metrics else (
                total / weight if weight else total)
            text += f" - {name}: {_format_value(value)}"
        return text

    def _estimate_step_duration(self, current, now):
        """Returns seconds per step, excluding the first step if possible.

        The first step usually includes one-off compilation, which would
        skew the estimate, so later estimates measure from its end.
        """
        if not current:
            return 0
        if self._time_after_first_step is not None and current > 1:
            time_per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            time_per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return time_per_unit

    def _output(self):
        return self.stream if self.stream is not None else sys.stdout

    def _is_dynamic(self):
        if self.dynamic is not None:
            return self.dynamic
        isatty = getattr(self._output(), "isatty", None)
        return bool(isatty is not None and isatty())

    def _write(self, text):
        stream = self._output()
        stream.write(text)
        stream.flush()


# Keras's other utils, one module each (imported last: they use nothing above).
from ..saving.serialization import (  # noqa: E402, F401  (Keras 3 lists them in utils too)
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)
from . import data_utils, generic_utils, np_utils, vis_utils  # noqa: E402, F401  (Keras 2 paths)
from .file_utils import get_file  # noqa: E402, F401
from .image_dataset import image_dataset_from_directory  # noqa: E402, F401
from .image_utils import array_to_img, img_to_array, load_img, save_img  # noqa: E402, F401
from .model_visualization import model_to_dot, plot_model  # noqa: E402, F401
from .py_dataset import PyDataset, Sequence  # noqa: E402, F401
from .random_seed import set_random_seed  # noqa: E402, F401
from .sequence_utils import pad_sequences  # noqa: E402, F401
from .timeseries_dataset import timeseries_dataset_from_array  # noqa: E402, F401
