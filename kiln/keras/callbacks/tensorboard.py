"""TensorBoard: epoch and batch metrics, the learning rate and weight histograms as TensorBoard
event files, laid out and named as Keras 3's callback writes them."""

import os
import time
import warnings

import numpy as np

from ...profiler.batches import BatchProfiler
from .callback import Callback
from .summary_writer import SummaryWriter, import_tensorboard


class TensorBoard(Callback):
    """Writes logs that `tensorboard --logdir <log_dir>` shows, as `keras.callbacks.TensorBoard`.

    Two runs, as Keras lays them out: `<log_dir>/train` and `<log_dir>/validation`.

    * Every epoch: `epoch_<name>` for each metric of the epoch logs (`epoch_loss`,
      `epoch_accuracy`, ...) and `epoch_learning_rate` in `train/`; the `val_` metrics without
      their prefix in `validation/`; the step is the epoch (0-based).
    * `update_freq="batch"` or an integer N: `batch_<name>` in `train/` every N training
      batches, the step counting batches over the whole fit from 1. (Keras 3 on TensorFlow
      leaves its `record_if` on after the batches, so with N > 1 it also drops the epoch
      scalars and histograms of epochs whose last batch count N does not divide; kiln writes
      them every epoch.)
    * After every evaluation (validation inside `fit` included): `evaluation_<name>_vs_
      iterations` in `validation/`, the step being the optimizer's `iterations`.
    * `histogram_freq=N`: every N epochs, a histogram of each layer weight, tagged
      `<weight path>/histogram` (e.g. `dense/kernel/histogram`) in `train/`; with
      `write_images=True` also the weight as an image, `<weight path>/image`, where Keras
      writes one (1D and 2D weights, and 3D/4D kernels whose last axis is 1, 3 or 4).
    * `write_graph=True`: the model's architecture (its Keras JSON, tag `keras`, plugin
      `graph_keras_model`) at step 0 in `train/`, from which TensorBoard's Graphs tab draws the
      conceptual graph. kiln has no TensorFlow op graph to write, so the op-level graph Keras
      writes on the TensorFlow backend is not there.
    * `write_steps_per_second=True`: `epoch_steps_per_second` and `batch_steps_per_second`.

    Writing needs the `tensorboard` package (`pip install 'kiln[tensorboard]'`), not
    TensorFlow.

    Args:
        log_dir: Directory of the log files; one callback per directory.
        histogram_freq: Epochs between weight histograms; 0 writes none.
        write_graph: Whether to write the model's architecture.
        write_images: Whether to write weights as images along with their histograms.
        write_steps_per_second: Whether to log training steps per second.
        update_freq: "epoch", "batch" (same as 1) or an integer number of batches between
            batch-level scalars.
        profile_batch: Batch(es) to profile: an integer, a pair (start, stop) or "start,stop";
            0 (default) profiles none. kiln.profiler records those batches call by call and
            writes `train/plugins/profile/<run>/<host>.trace.json.gz` for TensorBoard's
            profile plugin (the batches after them run plain, for the overhead).
        embeddings_freq: Accepted for compatibility (Keras's embeddings projector); must be 0.
        embeddings_metadata: Accepted for compatibility.
        **kwargs: Keras 2's `batch_size`, `write_grads`, `embeddings_layer_names` and
            `embeddings_data` are accepted and ignored with a warning, as tf.keras 2 did.
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None, **kwargs):
        super().__init__()
        _ignore_keras2_arguments(kwargs)
        import_tensorboard("TensorBoard")  # fail at construction, not in the middle of fit
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = _check_count(histogram_freq, "histogram_freq")
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = _check_update_freq(update_freq)
        self.profile_batch = profile_batch
        self._batch_profiler = BatchProfiler(profile_batch)  # validates it, as Keras
        if embeddings_freq:
            raise ValueError(f"TensorBoard: argument embeddings_freq must be 0 (kiln has no "
                             f"embeddings projector), got {embeddings_freq!r}")
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._global_train_batch = 0
        self._global_test_batch = 0
        self._batch_start_time = 0.0
        self._epoch_start_time = 0.0
        self._epoch_start_iterations = 0
        self._writers = {}

    # -- writers --------------------------------------------------------------------------
    def _writer(self, run):
        """The writer of run "train" or "validation", created on first use (so a callback that
        logs nothing makes no files)."""
        if run not in self._writers:
            self._writers[run] = SummaryWriter(os.path.join(self.log_dir, run), "TensorBoard")
        return self._writers[run]

    def _close_writers(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def set_model(self, model):
        super().set_model(model)
        self._close_writers()
        if self.write_graph:
            self._write_model_summary()

    def _write_model_summary(self):
        """The model's JSON under the `graph_keras_model` plugin, as Keras's
        `keras_model_summary` (only Functional and Sequential models, as Keras)."""
        if type(self.model).__name__ not in ("Functional", "Sequential"):
            return
        try:
            json_string = self.model.to_json()
        except Exception:  # as Keras: a model that does not serialize is simply not drawn
            return
        self._writer("train").text_tensor("keras", json_string, 0, "graph_keras_model", b"1")

    # -- training -------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._batch_profiler.begin(self.model)

    def on_train_end(self, logs=None):
        self._batch_profiler.finish(os.path.join(self.log_dir, "train"))
        self._close_writers()

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._epoch_start_time = time.time()
            self._epoch_start_iterations = self._iterations()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        self._batch_profiler.after_batch(self._global_train_batch,
                                         os.path.join(self.log_dir, "train"))
        if not self._records_batch(self._global_train_batch):
            return
        writer = self._writer("train")
        step = self._global_train_batch
        if self.write_steps_per_second:
            elapsed = time.time() - self._batch_start_time
            writer.scalar("batch_steps_per_second", 1.0 / max(elapsed, 1e-9), step)
        for name, value in _scalars(logs):
            writer.scalar(f"batch_{name}", value, step)

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _log_epoch_metrics(self, epoch, logs):
        if not logs:
            return
        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val_logs = {k[len("val_"):]: v for k, v in logs.items() if k.startswith("val_")}
        learning_rate = self._learning_rate()
        if learning_rate is not None:
            train_logs["learning_rate"] = learning_rate
        if self.write_steps_per_second:
            elapsed = max(time.time() - self._epoch_start_time, 1e-9)
            train_logs["steps_per_second"] = (
                self._iterations() - self._epoch_start_iterations) / elapsed
        for run, run_logs in (("train", train_logs), ("validation", val_logs)):
            scalars = _scalars(run_logs)
            if scalars:
                writer = self._writer(run)
                for name, value in scalars:
                    writer.scalar(f"epoch_{name}", value, epoch)
                writer.flush()  # a crashed fit keeps every finished epoch

    def _log_weights(self, epoch):
        writer = self._writer("train")
        for layer in getattr(self.model, "layers", ()):
            for weight in layer.weights:
                name = weight.path.replace(":", "_")
                values = np.asarray(weight)
                writer.histogram(f"{name}/histogram", values, epoch)
                if self.write_images:
                    image = _weight_as_image(values)
                    if image is not None:
                        writer.image(f"{name}/image", image, epoch)
        writer.flush()

    # -- evaluation -----------------------------------------------------------------------
    def on_test_batch_begin(self, batch, logs=None):
        self._global_test_batch += 1

    def on_test_end(self, logs=None):
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "iterations") or not logs:
            return
        writer = self._writer("validation")
        for name, value in _scalars(logs):
            writer.scalar(f"evaluation_{name}_vs_iterations", value, self._iterations())
        writer.flush()

    # -- helpers --------------------------------------------------------------------------
    def _records_batch(self, step):
        return self.update_freq != "epoch" and step % self.update_freq == 0

    def _iterations(self):
        optimizer = getattr(self.model, "optimizer", None)
        iterations = getattr(optimizer, "iterations", None)
        return 0 if iterations is None else int(np.asarray(iterations))

    def _learning_rate(self):
        """The optimizer's current learning rate (Keras logs it as `learning_rate`)."""
        optimizer = getattr(self.model, "optimizer", None)
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # a LossScaleOptimizer
        rate = getattr(optimizer, "learning_rate", None)
        if rate is None:
            return None
        try:
            return float(np.asarray(rate))
        except (TypeError, ValueError):
            return None


def _scalars(logs):
    """The (name, value) pairs of `logs` that are numbers (batch logs may carry e.g. `size`)."""
    pairs = []
    for name, value in (logs or {}).items():
        if name in ("batch", "size"):
            continue
        array = np.asarray(value)
        if array.dtype.kind in "biuf" and array.size == 1:
            pairs.append((name, float(array.reshape(()))))
    return pairs


def _weight_as_image(values):
    """A weight as Keras's `_log_weight_as_image` shapes it, `(k, height, width, 1)`, or None
    where Keras writes no image."""
    from ..backend import image_data_format

    image = np.squeeze(values)
    if image.ndim == 1:  # a bias
        image = image.reshape(1, image.shape[0], 1, 1)
    elif image.ndim == 2:  # a Dense kernel, laid wide
        if image.shape[0] > image.shape[1]:
            image = image.T
        image = image.reshape(1, image.shape[0], image.shape[1], 1)
    elif image.ndim == 3:  # a convolution kernel: one picture per filter
        if image_data_format() == "channels_last":
            image = np.transpose(image, (2, 0, 1))
        image = image.reshape(*image.shape, 1)
    if image.ndim == 4 and image.shape[-1] in (1, 3, 4):
        return image
    return None


# Keras 2 arguments tf.keras 2 accepted and ignored (with a warning); Keras 3 refuses them.
_KERAS2_ARGUMENTS = ("batch_size", "write_grads", "embeddings_layer_names", "embeddings_data")


def _ignore_keras2_arguments(kwargs):
    unknown = sorted(set(kwargs) - set(_KERAS2_ARGUMENTS))
    if unknown:
        raise TypeError(f"TensorBoard: unexpected keyword argument(s) {unknown}")
    for name in _KERAS2_ARGUMENTS:
        if kwargs.get(name):
            warnings.warn(f"TensorBoard: argument {name} (Keras 2) is ignored", stacklevel=3)


def _check_count(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"TensorBoard: argument {name} must be a non-negative integer, "
                         f"got {value!r}")
    return int(value)


def _check_update_freq(update_freq):
    if update_freq == "batch":
        return 1
    if update_freq == "epoch":
        return "epoch"
    if isinstance(update_freq, bool) or not isinstance(update_freq, (int, np.integer)) \
            or update_freq < 1:
        raise ValueError("TensorBoard: argument update_freq must be 'epoch', 'batch' or a "
                         f"positive integer, got {update_freq!r}")
    return int(update_freq)
