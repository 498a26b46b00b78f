"""ProgbarLogger: the Keras progress bar, or one line per epoch when not on a terminal."""

import sys

from ..utils import Progbar
from .callback import Callback


class ProgbarLogger(Callback):
    """Prints an "Epoch i/n" header and a progress bar or line per epoch.

    See `Progbar` for the output formats. Batch metrics are averaged over
    the epoch, weighted by `logs["size"]` (the batch's sample count) when
    the batch logs provide it. The epoch-end logs add the metrics batches
    do not report, such as `val_loss`.

    Args:
        stateful_metrics: Names of metrics displayed as given (e.g. values
            that are already running means) instead of averaged.
        dynamic: Whether to redraw the bar in place; `None` means only if
            the stream is a terminal.
        stream: Text stream to write to; `None` means `sys.stdout`, looked
            up at each write.
    """

    # Batch log entries that describe the batch rather than measure it.
    _NON_METRIC_KEYS = frozenset({"batch", "size"})

    def __init__(self, stateful_metrics=None, dynamic=None, stream=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or ())
        self.dynamic = dynamic
        self.stream = stream
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self.seen = 0
        self.progbar = None
        self._averaged_names = set()
        self._called_in_fit = False

    def set_params(self, params):
        super().set_params(params)
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else verbose
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def on_train_begin(self, logs=None):
        # Validation inside fit() must not draw its own bar.
        self._called_in_fit = True

    def on_epoch_begin(self, epoch, logs=None):
        self._reset_progbar()
        if self.verbose:
            stream = self.stream if self.stream is not None else sys.stdout
            stream.write(f"Epoch {epoch + 1}/{self.epochs}\n")
            stream.flush()

    def on_train_batch_end(self, batch, logs=None):
        self._update_progbar(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize_progbar(logs)

    def on_train_end(self, logs=None):
        self._called_in_fit = False

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._reset_progbar()

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._update_progbar(batch, logs)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize_progbar(logs)

    def on_predict_begin(self, logs=None):
        self._reset_progbar()

    def on_predict_batch_end(self, batch, logs=None):
        # Predict batch logs hold outputs, not metrics.
        self._update_progbar(batch, None)

    def on_predict_end(self, logs=None):
        self._finalize_progbar(None)

    def _reset_progbar(self):
        self.seen = 0
        self._averaged_names = set()
        self.progbar = Progbar(
            target=self.target, verbose=self.verbose,
            stateful_metrics=self.stateful_metrics, unit_name="step",
            dynamic=self.dynamic, stream=self.stream)

    def _update_progbar(self, batch, logs):
        if not self.verbose:
            return
        if self.progbar is None:
            self._reset_progbar()
        logs = logs or {}
        self.seen = batch + 1  # `batch` is 0-based.
        values = [(name, value) for name, value in logs.items()
                  if name not in self._NON_METRIC_KEYS]
        self._averaged_names.update(
            name for name, _ in values if name not in self.stateful_metrics)
        self.progbar.update(self.seen, values, finalize=False,
                            weight=logs.get("size"))

    def _finalize_progbar(self, logs):
        if not self.verbose:
            return
        if self.progbar is None:
            self._reset_progbar()
        if self.target is None:
            # Unknown step count: the first epoch tells us.
            self.target = self.progbar.target = self.seen
        # Metrics averaged over the batches keep their running mean.
        values = [(name, value) for name, value in (logs or {}).items()
                  if name not in self._averaged_names
                  and name not in self._NON_METRIC_KEYS]
        self.progbar.update(self.target, values, finalize=True)
