"""BackupAndRestore: resume a killed `fit` where it stopped.

At the end of every epoch (or every N batches) the callback saves the weights, the optimizer
state and the epoch counter; when `fit` starts again with the same callback after the process
was killed, it loads them and `fit` continues from the first epoch not completed. Files, in
`backup_dir`, as Keras 3 names them:

    latest.weights.h5        the Keras 3 weights file (the optimizer state in kiln's own
                             layout, see saving/weights_file.py); its root attribute
                             `training_metadata` holds the epoch counter, so weights and
                             counter are committed by one atomic rename: a kill between two
                             files can never pair epoch 3's weights with epoch 2's counter
    training_metadata.json   {"epoch": ..., "batch": ...}, as Keras writes it (for people and
                             tools; the copy inside the weights file is the one read back)

With `double_checkpoint=True` the previous pair is kept as `*.bkp` and used when the latest
cannot be read. Every file is written atomically (saving/atomic_file.py).
"""

import json
import os
import shutil

from ..saving import weights_file
from ..saving.atomic_file import atomic_path, write_text_atomically
from .callback import Callback

_METADATA_ATTRIBUTE = "training_metadata"


class BackupAndRestore(Callback):
    """Backs up the training state to `backup_dir` and restores it when `fit` restarts.

    Args:
        backup_dir: Folder for the backup files; use one folder per training run.
        save_freq: "epoch", or an integer N to back up every N training batches too. As in
            Keras, training resumes at the start of the first epoch not completed, with the
            weights of the last backup.
        double_checkpoint: Keep the previous backup as well, to fall back on.
        delete_checkpoint: Remove the backup files when training ends normally (Keras removes
            the whole folder; kiln removes its files, and the folder if that empties it).

    The model must be built before `fit` (it has to hold weights to restore). Resuming needs
    the same model and optimizer; pass `shuffle=False` or seed the run
    (`keras.utils.set_random_seed`) for a resumed run to equal an uninterrupted one.
    """

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and (not isinstance(save_freq, int) or save_freq <= 0):
            raise ValueError(f"Invalid value for argument `save_freq`. Received: "
                             f"save_freq={save_freq}. Expected either 'epoch' or an integer "
                             "value.")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._weights_path = os.path.join(self.backup_dir, "latest.weights.h5")
        self._training_metadata_path = os.path.join(self.backup_dir, "training_metadata.json")
        self._prev_weights_path = f"{self._weights_path}.bkp"
        self._prev_training_metadata_path = f"{self._training_metadata_path}.bkp"
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = 0
        self._current_epoch = 0
        self._restored = False

    # -- restore --------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self.model.weights  # noqa: B018 (builds a model whose input shape is known)
        if not self.model.built:
            raise ValueError("To use the BackupAndRestore callback, your model must be built "
                             f"before you call `fit()`. {self.model.context} is unbuilt. You "
                             "can build it beforehand by calling it on a batch of data.")
        try:
            self._restore()
        except (OSError, ValueError):
            # a damaged latest backup: fall back on the previous one if it was kept
            if not os.path.exists(self._prev_weights_path):
                raise
            for previous, path in ((self._prev_weights_path, self._weights_path),
                                   (self._prev_training_metadata_path,
                                    self._training_metadata_path)):
                if os.path.exists(previous):
                    with atomic_path(path, "BackupAndRestore") as temporary:
                        shutil.copyfile(previous, temporary)
            self._restore()

    def _restore(self):
        weights_path = self._weights_path
        if not os.path.exists(weights_path):
            return
        metadata = _read_metadata(weights_path)
        self.model.load_weights(weights_path)
        self._current_epoch = int(metadata["epoch"])
        # fit() starts from this epoch (Keras's `_initial_epoch`), read after on_train_begin
        self.model._initial_epoch = self._current_epoch
        self._restored = True

    # -- back up --------------------------------------------------------------------------------
    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save_model()

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model()

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        if batch <= self._last_batch_seen:  # a new epoch: batches count from 0
            added = batch + 1
        else:
            added = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += added
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _save_model(self):
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:
            for path, previous in ((self._weights_path, self._prev_weights_path),
                                   (self._training_metadata_path,
                                    self._prev_training_metadata_path)):
                if os.path.exists(path):
                    with atomic_path(previous, "BackupAndRestore") as temporary:
                        shutil.copyfile(path, temporary)
        metadata = {"epoch": self._current_epoch, "batch": self._last_batch_seen}
        # the optimizer's state as kiln holds it: restored exactly, before any step, without
        # building a plan to learn the weights' layouts (see weights_file.py)
        weights_file.save_weights(self.model, self._weights_path,
                                  root_attributes={_METADATA_ATTRIBUTE: json.dumps(metadata)},
                                  optimizer_layout="kiln")
        write_text_atomically(self._training_metadata_path, json.dumps(metadata),
                              "BackupAndRestore")

    def on_train_end(self, logs=None):
        if self._restored:
            # the resumed run is over: a later fit() of this model starts where it is told
            # (Keras leaves `_initial_epoch` set, so its next fit would skip epochs again)
            self.model._initial_epoch = None
            self._restored = False
        if not self.delete_checkpoint:
            return
        for path in (self._weights_path, self._training_metadata_path,
                     self._prev_weights_path, self._prev_training_metadata_path):
            if os.path.exists(path):
                os.remove(path)
        if os.path.isdir(self.backup_dir) and not os.listdir(self.backup_dir):
            os.rmdir(self.backup_dir)


def _read_metadata(weights_path):
    """The epoch counter saved with the weights, or Keras's JSON file beside them."""
    import h5py

    with h5py.File(weights_path, "r") as h5_file:
        text = h5_file.attrs.get(_METADATA_ATTRIBUTE)
    if text is None:  # a backup Keras wrote: its counter is in the JSON file
        json_path = os.path.join(os.path.dirname(weights_path), "training_metadata.json")
        with open(json_path, encoding="utf-8") as file:
            text = file.read()
    try:
        metadata = json.loads(text)
        int(metadata["epoch"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"BackupAndRestore: {weights_path} has no readable epoch counter "
                         f"({error})") from error
    return metadata
