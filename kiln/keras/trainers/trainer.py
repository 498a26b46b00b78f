"""Trainer: compile / fit / evaluate / predict over the model's cached step plans.

A plan is compiled per (training?, batch size) on first use; the smaller last batch gets its
own plan over the same weights. The training loop only points a plan's input at a batch that
a background thread gathered and runs the plan.
"""

import numpy as np

from ... import ops
from ...runtime.feeder import BatchFeeder
from .. import backend
from .. import losses as losses_module
from .. import metrics as metrics_module
from .. import optimizers as optimizers_module
from ..callbacks import CallbackList
from ..layers.base_layer import flatten, pack_like


class Trainer:
    # -- set-up -------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, **kwargs):
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument(s) {sorted(kwargs)}")
        self._build_if_possible()
        self.loss = losses_module.get_name(loss)
        self.metric_names = metrics_module.get_names(metrics)
        self.optimizer = optimizers_module.get(optimizer)
        self.compiled = True
        if self.built:
            self._make_loss_head()
        self._plans = {key: plan for key, plan in self._plans.items() if not key[0]}

    def _build_if_possible(self):
        """Models whose input shape is already known build at compile time."""

    def _make_loss_head(self):
        if len(self.outputs) != 1:
            raise ValueError(f"compile: {self.name} has {len(self.outputs)} outputs; kiln "
                             "trains models with one output so far")
        op = self.outputs[0].op
        if not isinstance(op, ops.Activation) or op.activation != "softmax":
            raise ValueError("compile: loss 'categorical_crossentropy' needs a model that ends "
                             "with a softmax activation (e.g. Dense(10, activation='softmax'))")
        self.loss_head = ops.SoftmaxCrossEntropy(op.name, backend.epsilon())

    # -- input checks -------------------------------------------------------------------------
    def _checked_array(self, array, argument, expected, context, why):
        """`array` as contiguous float32 if it is numeric with shape (batch, *expected)."""
        try:
            array = np.asarray(array)
        except Exception as error:
            raise ValueError(f"{self.name}: argument {argument} must be a numeric array") \
                from error
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
            raise ValueError(f"{self.name}: argument {argument} must be a numeric array, got "
                             f"dtype {array.dtype}")
        if array.shape[1:] != tuple(expected):
            raise ValueError(f"{context}: argument {argument} must have shape (batch, "
                             f"{', '.join(map(str, expected))}) {why}, got {array.shape}")
        return np.ascontiguousarray(array, dtype=np.float32)

    def _check_x(self, x):
        """x as a list of float32 arrays, one per model input (a dict by input name)."""
        self._build_from_data(x)
        if isinstance(x, dict) and isinstance(self._input_structure, dict):
            # Keras reads a dict of arrays by the keys of the model's inputs dict
            missing = sorted(set(self._input_structure) - set(x))
            if missing:
                raise ValueError(f"{self.name}: argument x has no entry for input(s) "
                                 f"{missing}; got keys {sorted(x)}")
            arrays = flatten({key: x[key] for key in self._input_structure})
        elif isinstance(x, dict):
            names = [t.name for t in self.inputs]
            missing = [name for name in names if name not in x]
            if missing:
                raise ValueError(f"{self.name}: argument x has no entry for input(s) "
                                 f"{missing}; got keys {sorted(x)}")
            arrays = [x[name] for name in names]
        elif isinstance(x, (list, tuple)) and len(self.inputs) > 1:
            arrays = list(x)
        else:
            arrays = [x]
        if len(arrays) != len(self.inputs):
            raise ValueError(f"{self.name}: argument x must hold {len(self.inputs)} arrays, "
                             f"one per input, got {len(arrays)}")
        checked = []
        for position, (array, tensor) in enumerate(zip(arrays, self.inputs, strict=True)):
            argument = "x" if len(arrays) == 1 else f"x[{position}]"
            checked.append(self._checked_array(array, argument, tensor.shape[1:],
                                               self._input_context(position),
                                               f"for data_format '{tensor.data_format}'"))
        if len({len(a) for a in checked}) > 1:
            raise ValueError(f"{self.name}: the arrays of x must have the same number of "
                             f"samples, got {[len(a) for a in checked]}")
        return checked

    def _check_y(self, y, count):
        y = self._checked_array(y, "y", self.outputs[0].shape[1:], self._output_context(),
                                "to match the model output (one-hot labels: use "
                                "kiln.keras.utils.to_categorical)")
        if len(y) != count:
            raise ValueError(f"{self.name}: x and y must have the same number of samples, got "
                             f"{count} and {len(y)}")
        return y

    # -- training -----------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, initial_epoch=0,
            steps_per_epoch=None, **kwargs):
        """Train on numpy arrays; returns a History. Arguments as in Keras."""
        if kwargs:
            raise TypeError(f"fit: unexpected keyword argument(s) {sorted(kwargs)}")
        if not self.compiled:
            raise RuntimeError("fit: call compile() first")
        xs = self._check_x(x)
        y = self._check_y(y, len(xs[0]))
        batch_size = int(batch_size or 32)
        if batch_size <= 0:
            raise ValueError(f"fit: argument batch_size must be a positive int, got {batch_size}")
        if validation_data is None and validation_split:
            if not 0 < validation_split < 1:
                raise ValueError(f"fit: argument validation_split must be in (0, 1), got "
                                 f"{validation_split}")
            split = int(len(y) * (1 - validation_split))
            validation_data = ([a[split:] for a in xs], y[split:])
            xs, y = [a[:split] for a in xs], y[:split]
        if validation_data is not None:
            if len(validation_data) != 2:
                raise ValueError("fit: argument validation_data must be a tuple (x_val, y_val)")
            val_x = validation_data[0]
            val_xs = self._check_x(val_x if len(self.inputs) > 1 or not isinstance(
                val_x, list) else val_x[0])
            val_y = self._check_y(validation_data[1], len(val_xs[0]))
        count = len(y)
        steps = -(-count // batch_size)
        if steps_per_epoch:
            steps = min(steps, int(steps_per_epoch))
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                                     model=self, verbose=verbose, epochs=epochs, steps=steps)
        accuracy_names = self.metric_names
        self.stop_training = False
        callback_list.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            callback_list.on_epoch_begin(epoch)
            order = np.random.permutation(count) if shuffle else np.arange(count)
            order = order[:steps * batch_size]
            totals = np.zeros(2)
            seen = 0
            feeder = BatchFeeder(xs, y, order, batch_size)
            for step, (x_batches, y_batch) in enumerate(feeder.batches()):
                size = len(y_batch)
                plan = self._plan(True, size)
                plan.use_input(x_batches, y_batch)
                callback_list.on_train_batch_begin(step)
                loss, accuracy = plan.train_step()
                totals += (loss * size, accuracy * size)
                seen += size
                logs = {"loss": float(loss), "size": size}
                for name in accuracy_names:
                    logs[name] = float(accuracy)
                callback_list.on_train_batch_end(step, logs)
            epoch_logs = {"loss": float(totals[0] / seen)}
            for name in accuracy_names:
                epoch_logs[name] = float(totals[1] / seen)
            if validation_data is not None:
                val_loss, val_accuracy = self._evaluate_arrays(val_xs, val_y, batch_size)
                epoch_logs["val_loss"] = val_loss
                for name in accuracy_names:
                    epoch_logs[f"val_{name}"] = val_accuracy
            callback_list.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        callback_list.on_train_end()
        return self.history

    # -- inference ----------------------------------------------------------------------------
    def _predict_arrays(self, xs, batch_size, on_batch=None):
        """Outputs (one array per model output) for all of xs; `on_batch(index, start,
        first output)` after each batch."""
        count = len(xs[0])
        outputs = [np.empty((count, *t.shape[1:]), dtype=np.float32) for t in self.outputs]
        for index, start in enumerate(range(0, count, batch_size)):
            size = min(batch_size, count - start)
            plan = self._plan(False, size)
            for array, x in zip(plan.input_arrays, xs, strict=True):
                array[...] = x[start:start + size]
            plan.predict_step()
            for out, result in zip(outputs, plan.output_arrays, strict=True):
                out[start:start + size] = result
            if on_batch is not None:
                on_batch(index, start, outputs[0][start:start + size])
        return outputs

    def _evaluate_arrays(self, xs, y, batch_size, callback_list=None):
        def report(index, start, probabilities):
            labels = y[start:start + len(probabilities)]
            logs = {"loss": float(np.mean(losses_module.categorical_crossentropy(
                labels, probabilities))), "size": len(probabilities)}
            for name in self.metric_names:
                logs[name] = float(np.mean(metrics_module.categorical_accuracy(
                    labels, probabilities)))
            callback_list.on_test_batch_end(index, logs)

        probabilities = self._predict_arrays(xs, batch_size,
                                             report if callback_list is not None else None)[0]
        loss = float(np.mean(losses_module.categorical_crossentropy(y, probabilities)))
        accuracy = float(np.mean(metrics_module.categorical_accuracy(y, probabilities)))
        return loss, accuracy

    def predict(self, x, batch_size=None, verbose=0):
        """Outputs for x: one array, or the model's output structure (list / dict)."""
        xs = self._check_x(x)
        outputs = self._predict_arrays(xs, int(batch_size or 32))
        # as Keras, a one-output list or tuple comes back as the array itself (not a dict)
        if len(outputs) == 1 and not isinstance(self._output_structure, dict):
            return outputs[0]
        return pack_like(self._output_structure, outputs)

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, return_dict=False):
        """Returns the loss, or [loss, *metrics] when compiled with metrics (as in Keras)."""
        if not self.compiled:
            raise RuntimeError("evaluate: call compile() first")
        xs = self._check_x(x)
        y = self._check_y(y, len(xs[0]))
        batch_size = int(batch_size or 32)
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(add_progbar=verbose != 0, model=self, verbose=verbose,
                                     epochs=1, steps=-(-len(y) // batch_size))
        callback_list.on_test_begin()
        loss, accuracy = self._evaluate_arrays(xs, y, batch_size, callback_list)
        results = {"loss": loss, **{name: accuracy for name in self.metric_names}}
        callback_list.on_test_end(results)
        if return_dict:
            return results
        return list(results.values()) if self.metric_names else loss

