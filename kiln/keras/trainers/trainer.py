"""Trainer: compile / fit / evaluate / predict over the model's cached step plans.

A plan is compiled per (kind, batch size) on first use, kind being training, evaluation or
inference; the smaller last batch gets its own plan over the same weights. The training loop
only points a plan's input at a batch that a background thread gathered and runs the plan.
Losses and metrics are computed inside the plans by the same kernels in fit and evaluate
(compile_utils.py says which, batch_steps.py feeds them).
"""

import numpy as np

from .. import optimizers as optimizers_module
from ..callbacks import CallbackList, ProgbarLogger
from ..distribution import data_parallel_loop as data_parallel
from ..layers.base_layer import pack_like
from .batch_methods import BatchMethods, is_data_source, results_in_order
from .batch_steps import BatchRunner
from .class_id_checks import check_all_class_ids
from .compile_utils import CompileLoss, CompileMetrics, output_names
from .data_adapters import ModelSignature, get_data_adapter


class Trainer(BatchMethods):
    # -- set-up -------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile="auto", **kwargs):
        """As Keras 3 (run_eagerly, steps_per_execution and jit_compile change nothing: the
        step is always one compiled plan)."""
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument(s) {sorted(kwargs)}")
        self._refuse_step_overrides()
        self._build_if_possible()
        self.compiled = False  # until the losses resolve (a loss without a kernel raises)
        self.loss, self.loss_weights = loss, loss_weights
        self._compile_loss = CompileLoss(loss, loss_weights)
        self._compile_metrics = CompileMetrics(metrics, weighted_metrics)
        self.optimizer = optimizers_module.get(optimizer)
        if self.built:
            self._make_loss_head()
        self.compiled = True
        self._probe_data = True  # see _start_pass
        self._plans = {key: plan for key, plan in self._plans.items() if key[0] is False}

    def _build_if_possible(self):
        """Models whose input shape is already known build at compile time."""

    def _make_loss_head(self):
        """Resolve the losses and metrics on the built model's outputs (Keras does it on
        the first batch; kiln knows the output shapes once the graph exists)."""
        self._compile_loss.build(self)
        self._compile_metrics.build(self, self._compile_loss)

    @property
    def metrics_names(self):
        if not getattr(self, "compiled", False) or self._compile_loss.entries is None:
            return []  # as Keras before the losses are built
        return BatchRunner(self, "evaluate").names()

    def _signature(self, owner):
        return ModelSignature(
            input_shapes=[t.shape[1:] for t in self.inputs],
            input_names=(list(self._input_structure) if isinstance(self._input_structure,
                                                                   dict)
                         else [t.name for t in self.inputs]),
            output_names=output_names(self), owner=owner,
            input_contexts=[self._input_context(i) for i in range(len(self.inputs))],
            input_hints=[f"for data_format '{t.data_format}'" for t in self.inputs],
            input_dtypes=[np.int32 if t.dtype in ("int32", "int64") else np.float32
                          for t in self.inputs],
            input_index_limits=[self._index_limit(t) for t in self.inputs])

    def _start_pass(self, adapter):
        """What Keras does to its data at the start of fit and evaluate: the first after
        compile builds the losses and metrics on one batch of a fresh pass (an observable
        fetch: a PyDataset's first item, the shuffle drawn for that pass), then every one
        resets the data (a PyDataset's on_epoch_end is called)."""
        if getattr(self, "_probe_data", False):
            self._probe_data = False
            adapter.probe()
        adapter.reset()

    @staticmethod
    def _stateful_progbar(callback_list, names):
        """fit / evaluate log running means (as Keras): the progress bar shows them as they
        are instead of averaging them again."""
        for callback in callback_list.callbacks:
            if isinstance(callback, ProgbarLogger):
                callback.stateful_metrics |= set(names)

    # -- training -----------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1, **kwargs):
        """Train; returns a History. Arguments as in Keras 3."""
        if kwargs:
            raise TypeError(f"fit: unexpected keyword argument(s) {sorted(kwargs)}")
        if not self.compiled:
            raise RuntimeError("fit: call compile() first")
        self._build_from_arrays(x)
        if validation_data is None and validation_split:
            if not 0 < validation_split < 1:
                raise ValueError(f"fit: argument validation_split must be in (0, 1), got "
                                 f"{validation_split}")
            (x, y, sample_weight), validation_data = _split_last(
                (x, y, sample_weight), validation_split)
        adapter = get_data_adapter(x, y, sample_weight, batch_size, steps_per_epoch, shuffle,
                                   class_weight, signature=self._signature("fit"))
        check_all_class_ids(self, adapter, "fit")
        val_adapter = None
        if is_data_source(validation_data):  # a generator or PyDataset yields (x, y) itself
            validation_data = (validation_data, None)
        if validation_data is not None:
            if not isinstance(validation_data, (list, tuple)) or len(validation_data) not in (
                    2, 3):
                raise ValueError("fit: argument validation_data must be a tuple (x_val, "
                                 "y_val) or (x_val, y_val, val_sample_weight)")
            val_x, val_y, *val_weight = validation_data
            val_adapter = get_data_adapter(
                val_x, val_y, val_weight[0] if val_weight else None,
                validation_batch_size or getattr(adapter, "batch_size", batch_size),
                validation_steps, False, signature=self._signature("fit (validation data)"))
            check_all_class_ids(self, val_adapter, "fit (validation data)")
        # data-parallel: the ranks check they run the same job, take rank 0's weights and
        # each read their shard of every batch (one process: the adapters as they are)
        adapter = data_parallel.start(self, "fit", adapter, reducer=True)
        val_adapter = data_parallel.shard(val_adapter, "fit (validation data)")
        self._start_pass(adapter)
        verbose = 1 if verbose == "auto" else verbose
        runner = BatchRunner(self, "fit")
        callback_list = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                                     model=self, verbose=verbose, epochs=epochs,
                                     steps=adapter.steps)
        data_parallel.rank_callbacks(callback_list)
        self._stateful_progbar(callback_list, runner.names())
        self.stop_training = False
        callback_list.on_train_begin()
        # BackupAndRestore sets the epoch to resume from in on_train_begin, as in Keras
        initial_epoch = getattr(self, "_initial_epoch", None) or initial_epoch
        last_logs = {}
        try:
            for epoch in range(initial_epoch, epochs):
                runner.reset()
                callback_list.on_epoch_begin(epoch)
                batch_begin, batch_end = _batch_hooks(callback_list, "train")
                step = -1
                for step, (xs, ys, weights) in enumerate(adapter.batches()):
                    if batch_begin:
                        callback_list.on_train_batch_begin(step)
                    runner.run(xs, ys, weights, step, epoch)
                    if batch_end:
                        callback_list.on_train_batch_end(step, data_parallel.logs(runner))
                    if self.stop_training:
                        break
                # an epoch that got no batch (its data ran out) logs the last epoch's
                # training logs again, as Keras does
                if step >= 0:
                    last_logs = data_parallel.logs(runner)
                epoch_logs = dict(last_logs)
                if val_adapter is not None and (epoch + 1) % validation_freq == 0:
                    val_logs = self._evaluate_batches(val_adapter, "fit (validation data)",
                                                      callback_list)
                    epoch_logs.update({f"val_{name}": value for name, value in val_logs.items()})
                callback_list.on_epoch_end(epoch, epoch_logs)
                if self.stop_training:
                    break
            data_parallel.finish_fit(self)
        finally:
            self._gradient_reducer = None
            adapter.close()
            if val_adapter is not None:
                val_adapter.close()
        callback_list.on_train_end()
        return self.history

    def _build_from_arrays(self, x):
        if not self.built and (hasattr(x, "shape") or isinstance(x, (list, tuple))):
            self._build_from_data(x)

    def _evaluate_batches(self, adapter, owner, callback_list=None):
        """Loss and metrics over the adapter's batches through evaluation plans."""
        runner = BatchRunner(self, "evaluate", owner)
        # the whole pass holds the plans' lock: the metrics accumulate in the model's metric
        # objects, which an evaluate in another thread would reset midway
        with self._plans.lock:
            runner.reset()
            self._start_pass(adapter)
            batch_begin = batch_end = False
            if callback_list is not None:
                callback_list.on_test_begin()
                batch_begin, batch_end = _batch_hooks(callback_list, "test")
            for step, (xs, ys, weights) in enumerate(adapter.batches()):
                if batch_begin:
                    callback_list.on_test_batch_begin(step)
                runner.run(xs, ys, weights, step)
                if batch_end:
                    callback_list.on_test_batch_end(step, data_parallel.logs(runner))
            logs = data_parallel.logs(runner)
        if callback_list is not None:
            callback_list.on_test_end(logs)
        return logs

    # -- inference ----------------------------------------------------------------------------
    def _predict_batches(self, adapter):
        """Outputs (one array per model output) over the adapter's batches."""
        parts = [[] for _ in self.outputs]
        try:
            for xs, _, _ in adapter.batches():
                # another thread may run this plan (or train the weights) as soon as the
                # lock is released: the outputs are copied out under it
                with self._plans.lock:
                    plan = self._plan(False, len(xs[0]), inputs=xs)
                    # copied, not re-pointed: an output may be the input memory itself
                    for array, x in zip(plan.input_arrays, xs, strict=True):
                        array[...] = x
                    plan.predict_step()
                    for part, result in zip(parts, plan.output_arrays, strict=True):
                        part.append(result.copy())
        finally:
            adapter.close()
        return [np.concatenate(part) if part else np.empty((0, *t.shape[1:]), np.float32)
                for part, t in zip(parts, self.outputs, strict=True)]

    def predict(self, x, batch_size=None, verbose=0, steps=None):
        """Outputs for x (arrays, a generator or a PyDataset): one array, or the model's
        output structure (list / dict)."""
        return self._predict(x, batch_size, steps, "predict")

    def _predict(self, x, batch_size, steps, owner):
        """predict, its errors naming `owner` (predict_on_batch runs it too)."""
        self._build_from_arrays(x)
        adapter = get_data_adapter(x, None, None, batch_size, steps, False,
                                   signature=self._signature(owner))
        adapter = data_parallel.start(self, "predict", adapter)
        outputs = data_parallel.gather_predictions(adapter, self._predict_batches(adapter))
        # as Keras, a one-output list or tuple comes back as the array itself (not a dict)
        if len(outputs) == 1 and not isinstance(self._output_structure, dict):
            return outputs[0]
        return pack_like(self._output_structure, outputs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False, **kwargs):
        """The loss, or [loss, *other losses and metrics] (a dict with return_dict=True),
        computed by the training kernels in inference-mode plans, as in Keras 3."""
        if kwargs:
            raise TypeError(f"evaluate: unexpected keyword argument(s) {sorted(kwargs)}")
        if not self.compiled:
            raise RuntimeError("evaluate: call compile() first")
        self._build_from_arrays(x)
        adapter = get_data_adapter(x, y, sample_weight, batch_size, steps, False,
                                   signature=self._signature("evaluate"))
        check_all_class_ids(self, adapter, "evaluate")
        adapter = data_parallel.start(self, "evaluate", adapter)
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                     verbose=verbose, epochs=1, steps=adapter.steps)
        data_parallel.rank_callbacks(callback_list)
        self._stateful_progbar(callback_list, BatchRunner(self, "evaluate").names())
        try:
            results = self._evaluate_batches(adapter, "evaluate", callback_list)
        finally:
            adapter.close()
        if return_dict:
            return results
        return results_in_order(self.metrics_names, results)


def _batch_hooks(callback_list, kind):
    """(call on_<kind>_batch_begin, call on_<kind>_batch_end) for this epoch: a hook no
    callback overrides is skipped, and with it the per-batch read-back of the loss and metrics
    into the logs dict, which nothing would see (the epoch-end logs are read once). A
    data-parallel run keeps both: the logs average over the ranks in a collective every rank
    must join, and rank 0 alone has the progress bar."""
    every = data_parallel.active_world() is not None
    return (every or callback_list.overrides(f"on_{kind}_batch_begin"),
            every or callback_list.overrides(f"on_{kind}_batch_end"))


def _leaves(value):
    """The arrays of a structure, as Keras' tree.flatten walks it: lists, tuples and dicts are
    structure (so a Python list of numbers is a structure of scalars, not an array)."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _split_last(arrays, fraction):
    """((x, y, sample_weight) before the split, (x, y, sample_weight) after): Keras'
    validation_split keeps the last `fraction` of the samples for validation, and refuses
    what it cannot slice (Python lists, generators) and a split that leaves a side empty,
    with its messages."""
    leaves = _leaves(arrays)
    unsplitable = []
    for leaf in leaves:
        if leaf is not None and not hasattr(leaf, "__array__") and type(leaf) not in \
                unsplitable:
            unsplitable.append(type(leaf))
    if unsplitable:
        hint = ("; convert Python lists with np.asarray" if any(
            kind in (int, float, bool, str) for kind in unsplitable) else
            "; give validation_data for a generator or PyDataset")
        raise ValueError("fit: Argument `validation_split` is only supported for tensors or "
                         "NumPy arrays. Found incompatible type in the input: "
                         f"{unsplitable}{hint}")
    present = [leaf for leaf in leaves if leaf is not None]
    if not present:
        return arrays, arrays
    count = int(np.shape(present[0])[0])
    split = int(np.floor(count * (1.0 - fraction)))
    if split in (0, count):
        raise ValueError(f"fit: Training data contains {count} samples, which is not "
                         "sufficient to split it into a validation and training set as "
                         f"specified by `validation_split={fraction}`. Either provide more "
                         "data, or a different value for the `validation_split` argument.")

    def cut(value, part):
        if value is None:
            return None
        if isinstance(value, dict):
            return {key: cut(item, part) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(cut(item, part) for item in value)
        return np.asarray(value)[part]

    first = tuple(cut(value, slice(None, split)) for value in arrays)
    second = tuple(cut(value, slice(split, None)) for value in arrays)
    return first, second
