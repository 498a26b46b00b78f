"""Keras 2's generator methods and the one-batch methods, on top of fit / evaluate / predict.

`fit_generator`, `evaluate_generator` and `predict_generator` are Keras 2 spellings that the
classic scripts (cifar10_cnn) still call: they take the Keras 2 arguments (`workers`,
`use_multiprocessing`, `max_queue_size`), build the data adapter with them and hand it to the
Keras 3 method. `train_on_batch`, `test_on_batch` and `predict_on_batch` run one step on one
batch; as Keras 3 (3.15) does, each call starts its losses and metrics anew, so it reports
that batch alone.
"""

import warnings

from .batch_steps import BatchRunner
from .data_adapters import get_data_adapter


def results_in_order(names, logs):
    """The logged values as Keras's list results give them: one per metric name, in
    `metrics_names` order, then any other log by sorted key. Two outputs of one nested model
    share a loss name ('functional_loss'): the dict keeps one value, the list repeats it for
    each name, as Keras does (scripts index the list by `metrics_names`)."""
    values = [logs[name] for name in names if name in logs]
    values += [logs[key] for key in sorted(logs) if key not in names]
    return values if len(values) > 1 else values[0]


def is_data_source(data):
    """A generator, iterator or PyDataset (not a tuple of arrays)."""
    return data is not None and not isinstance(data, (tuple, list, dict)) \
        and not hasattr(data, "shape")


class BatchMethods:
    """Mixed into Trainer; relies on its fit / evaluate / predict and _signature."""

    # -- Keras 2 generator methods ----------------------------------------------------------
    def _generator_adapter(self, generator, steps, owner, shuffle, class_weight=None,
                           max_queue_size=10, workers=1, use_multiprocessing=False):
        self._build_from_arrays(generator)
        return get_data_adapter(generator, steps_per_epoch=steps, shuffle=shuffle,
                                class_weight=class_weight, signature=self._signature(owner),
                                workers=workers, use_multiprocessing=use_multiprocessing,
                                max_queue_size=max_queue_size)

    def fit_generator(self, generator, steps_per_epoch=None, epochs=1, verbose=1,
                      callbacks=None, validation_data=None, validation_steps=None,
                      validation_freq=1, class_weight=None, max_queue_size=10, workers=1,
                      use_multiprocessing=False, shuffle=True, initial_epoch=0):
        """Keras 2: fit on a generator or Sequence; `workers` threads (processes with
        use_multiprocessing, for a Sequence) fetch the batches."""
        warnings.warn("Model.fit_generator is deprecated (Keras 2); use Model.fit, which "
                      "supports generators and PyDatasets", DeprecationWarning, stacklevel=2)
        if not self.compiled:
            raise RuntimeError("fit_generator: call compile() first")
        adapter = self._generator_adapter(generator, steps_per_epoch, "fit_generator",
                                          shuffle, class_weight, max_queue_size, workers,
                                          use_multiprocessing)
        if is_data_source(validation_data):
            validation_data = (self._generator_adapter(
                validation_data, validation_steps, "fit_generator (validation data)", False,
                max_queue_size=max_queue_size, workers=workers,
                use_multiprocessing=use_multiprocessing), None)
        return self.fit(adapter, epochs=epochs, verbose=verbose, callbacks=callbacks,
                        validation_data=validation_data, validation_steps=validation_steps,
                        validation_freq=validation_freq, initial_epoch=initial_epoch)

    def evaluate_generator(self, generator, steps=None, callbacks=None, max_queue_size=10,
                           workers=1, use_multiprocessing=False, verbose=0):
        """Keras 2: evaluate on a generator or Sequence."""
        warnings.warn("Model.evaluate_generator is deprecated (Keras 2); use Model.evaluate",
                      DeprecationWarning, stacklevel=2)
        adapter = self._generator_adapter(generator, steps, "evaluate_generator", False,
                                          max_queue_size=max_queue_size, workers=workers,
                                          use_multiprocessing=use_multiprocessing)
        return self.evaluate(adapter, steps=steps, callbacks=callbacks, verbose=verbose)

    def predict_generator(self, generator, steps=None, callbacks=None, max_queue_size=10,
                          workers=1, use_multiprocessing=False, verbose=0):
        """Keras 2: predict on a generator or Sequence."""
        warnings.warn("Model.predict_generator is deprecated (Keras 2); use Model.predict",
                      DeprecationWarning, stacklevel=2)
        adapter = self._generator_adapter(generator, steps, "predict_generator", False,
                                          max_queue_size=max_queue_size, workers=workers,
                                          use_multiprocessing=use_multiprocessing)
        return self.predict(adapter, steps=steps, verbose=verbose)

    # -- one batch ----------------------------------------------------------------------------
    def _one_batch(self, x, y, sample_weight, class_weight, owner):
        """The single checked batch (xs, ys, sample_weights) of x, y, sample_weight."""
        self._build_from_arrays(x)
        adapter = get_data_adapter(x, y, sample_weight, None, None, False, class_weight,
                                   signature=self._signature(owner))
        adapter.batch_size = adapter.count  # the whole of x is the batch
        adapter.num_batches = 1
        (batch,) = list(adapter.batches())  # staged views: aligned, kept alive by the views
        # Keras builds the losses and metrics on this batch: fit / evaluate then do not
        # fetch one of their own (Trainer._start_pass)
        self._probe_data = False
        return batch

    def _batch_runner(self, kind, owner):
        runners = self.__dict__.setdefault("_on_batch_runners", {})
        if kind not in runners or runners[kind].metrics is not self._compile_metrics:
            runners[kind] = BatchRunner(self, kind, owner)
            runners[kind].reset()
        return runners[kind]

    def reset_metrics(self):
        """Start the running losses and metrics of train_on_batch / test_on_batch anew."""
        for runner in self.__dict__.get("_on_batch_runners", {}).values():
            runner.reset()

    def _batch_results(self, runner, return_dict):
        logs = runner.logs()
        if return_dict:
            return logs
        return results_in_order(runner.names(), logs)

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One training step on this batch; its loss (and metrics), as Keras 3."""
        if not self.compiled:
            raise RuntimeError("train_on_batch: call compile() first")
        xs, ys, weights = self._one_batch(x, y, sample_weight, class_weight, "train_on_batch")
        runner = self._batch_runner("fit", "train_on_batch")
        runner.reset()
        runner.run(xs, ys, weights, None)
        return self._batch_results(runner, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Loss (and metrics) on this batch without training, as Keras 3."""
        if not self.compiled:
            raise RuntimeError("test_on_batch: call compile() first")
        xs, ys, weights = self._one_batch(x, y, sample_weight, None, "test_on_batch")
        runner = self._batch_runner("evaluate", "test_on_batch")
        runner.reset()
        runner.run(xs, ys, weights, None)
        return self._batch_results(runner, return_dict)

    def predict_on_batch(self, x):
        """The model's outputs for this one batch."""
        self._build_from_arrays(x)
        count = len(x[0] if isinstance(x, (list, tuple)) else
                    next(iter(x.values())) if isinstance(x, dict) else x)
        return self._predict(x, max(count, 1), None, "predict_on_batch")
