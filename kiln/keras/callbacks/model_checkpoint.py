"""ModelCheckpoint: save the model or its weights during training (Keras 3 semantics, Keras 2
spellings accepted).

The file name may hold fields filled at save time: `{epoch}` (from 1), `{batch}` (from 1, when
saving every N batches) and any logged value (`{val_loss:.2f}`; `{val_acc}` and
`{val_accuracy}` both work). Every save is atomic: the file is written under a temporary name
in the same folder and renamed, so a crash mid-save leaves the previous checkpoint intact.
"""

import os

import numpy as np

from ..saving import weights_file
from ..saving.atomic_file import atomic_path
from .monitor_callback import MonitorCallback, with_aliases

_WEIGHTS_SUFFIXES = (".weights.h5", ".h5", ".hdf5")  # .h5: Keras 2 scripts' weights files
_MODEL_SUFFIXES = (".keras", ".h5", ".hdf5")


class ModelCheckpoint(MonitorCallback):
    """Saves the model or its weights at the end of epochs (or every N batches).

    Args:
        filepath: Where to save, with optional `{epoch}`, `{batch}` and log fields. Must end
            in ".weights.h5" with `save_weights_only=True` (".h5" is accepted, as Keras 2
            scripts write it, and saved once kiln writes Keras 2 weights files), else in
            ".keras" or ".h5".
        monitor: Quantity that decides `save_best_only` ("val_loss"; "val_acc" and
            "val_accuracy" find each other).
        verbose: 1 prints a message at each decision.
        save_best_only: Only save when `monitor` improves on the best value so far.
        save_weights_only: `model.save_weights(filepath)` instead of `model.save(filepath)`.
        mode: "auto", "min" or "max": which direction improves.
        save_freq: "epoch", or an integer N to save every N training batches.
        initial_value_threshold: Initial best value for `save_best_only`.
        period: Keras 2's argument: save every `period` epochs (with `save_freq="epoch"`).
    """

    _missing_message = "Can save best model only with {monitor} available."

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None, period=None):
        super().__init__(monitor, mode, initial_value_threshold)
        self.verbose = verbose
        self.filepath = os.fspath(filepath)
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self.period = 1 if period is None else period
        self._epochs_since_last_save = 0
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = None
        self._current_epoch = 0
        if save_freq != "epoch" and (not isinstance(save_freq, int) or save_freq <= 0):
            raise ValueError(f"Unrecognized save_freq: {save_freq}. Expected save_freq are "
                             "'epoch' or integer values")
        if period is not None and (save_freq != "epoch" or not isinstance(period, int)
                                   or period <= 0):
            raise ValueError(f"ModelCheckpoint: argument period (Keras 2: save every N epochs) "
                             f"must be a positive int used with save_freq='epoch', got "
                             f"period={period!r}, save_freq={save_freq!r}")
        if save_weights_only and not self.filepath.endswith(_WEIGHTS_SUFFIXES):
            raise ValueError("When using `save_weights_only=True` in `ModelCheckpoint`, the "
                             "filepath provided must end in `.weights.h5` (Keras weights "
                             f"format). Received: filepath={self.filepath}")
        if not save_weights_only and not self.filepath.endswith(_MODEL_SUFFIXES):
            raise ValueError("The filepath provided must end in `.keras` (Keras model "
                             f"format). Received: filepath={self.filepath}")

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        # fail before training rather than after the first epoch
        if self.save_weights_only:
            weights_file.check_weights_filepath(self.filepath, "ModelCheckpoint")
        elif not hasattr(self.model, "save"):
            raise NotImplementedError(
                f"ModelCheckpoint: saving the whole model ({self.filepath}) needs model.save, "
                "which kiln does not have yet; pass save_weights_only=True with a filepath "
                "ending in '.weights.h5'")

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(epoch=self._current_epoch, batch=batch, logs=logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.monitor_op is None:
            self._set_monitor_op()
        if self.save_freq != "epoch":
            return
        self._epochs_since_last_save += 1
        if self._epochs_since_last_save >= self.period:
            self._epochs_since_last_save = 0
            self._save_model(epoch=epoch, batch=None, logs=logs)

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        if self._last_batch_seen is None or batch <= self._last_batch_seen:
            added = batch + 1  # a new epoch: batches count from 0
        else:
            added = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += added
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _should_save_model(self, epoch, logs, filepath):
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = self.get_monitor_value(logs)
        if current is None:
            return True  # as Keras: without the monitor, save every time (warned once)
        if isinstance(current, np.ndarray) and current.ndim > 0:
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to "
                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}")
        return False

    def _save_model(self, epoch, batch, logs):
        logs = logs or {}
        filepath = self._get_file_path(epoch, batch, logs)
        if os.path.isdir(filepath):
            raise OSError("Please specify a non-directory filepath for ModelCheckpoint. "
                          f"Filepath used is an existing directory: {filepath}")
        if not self._should_save_model(epoch, logs, filepath):
            return
        folder = os.path.dirname(filepath)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)  # atomic itself
        else:
            # written under a temporary name that ends like `filepath`, then renamed, whatever
            # model.save does inside
            with atomic_path(filepath, "ModelCheckpoint") as temporary:
                self.model.save(temporary, overwrite=True)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")

    def _get_file_path(self, epoch, batch, logs):
        fields = with_aliases(logs)
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **fields)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **fields)
        except KeyError as error:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {error}") from error
