"""Model: compile / fit / evaluate / predict over cached step plans.

A plan is compiled per (training?, batch size) on first use; the smaller last batch gets its
own plan over the same weights. The training loop only copies a batch into the plan's input
buffers and runs the plan.
"""

import numpy as np

from ... import ops
from ...binding import constants as dnnl
from ...plan.step_plan import StepPlan
from ...runtime.feeder import BatchFeeder
from .. import backend
from .. import losses as losses_module
from .. import metrics as metrics_module
from .. import optimizers as optimizers_module
from ..callbacks import CallbackList


class Model:
    def __init__(self, name=None):
        self.name = name or "model"
        self.built = False
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._plans = {}

    # -- set-up -------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, **kwargs):
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument(s) {sorted(kwargs)}")
        self.build()
        self.loss = losses_module.get_name(loss)
        self.metric_names = metrics_module.get_names(metrics)
        if not isinstance(self.ops[-1], ops.Activation) or self.ops[-1].activation != "softmax":
            raise ValueError("compile: loss 'categorical_crossentropy' needs a model that ends "
                             "with a softmax activation (e.g. Dense(10, activation='softmax'))")
        self.optimizer = optimizers_module.get(optimizer)
        self.loss_head = ops.SoftmaxCrossEntropy(self.ops[-1].name, backend.epsilon())
        self._plans = {key: plan for key, plan in self._plans.items() if not key[0]}
        self.compiled = True

    def _plan(self, training, batch_size):
        key = (training, batch_size)
        plan = self._plans.get(key)
        if plan is None:
            input_shape = (batch_size, *self.input.shape[1:])
            data_type = dnnl.bf16 if self.compute_dtype == "bfloat16" else dnnl.f32
            if training:
                plan = StepPlan(self.ops, input_shape, self.data_format, self.store,
                                self.loss_head, self.optimizer.make_updater(),
                                label_shape=(batch_size, *self.output.shape[1:]),
                                data_type=data_type)
            else:
                plan = StepPlan(self.ops, input_shape, self.data_format, self.store,
                                data_type=data_type)
            self._plans[key] = plan
        return plan

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
        return self._checked_array(x, "x", self.input.shape[1:], self.first_layer.context,
                                   f"for data_format '{self.data_format}'")

    def _check_y(self, y, count):
        y = self._checked_array(y, "y", self.output.shape[1:], self.layers[-1].context,
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
        x = self._check_x(x)
        y = self._check_y(y, len(x))
        batch_size = int(batch_size or 32)
        if batch_size <= 0:
            raise ValueError(f"fit: argument batch_size must be a positive int, got {batch_size}")
        if validation_data is None and validation_split:
            if not 0 < validation_split < 1:
                raise ValueError(f"fit: argument validation_split must be in (0, 1), got "
                                 f"{validation_split}")
            split = int(len(x) * (1 - validation_split))
            x, y, validation_data = x[:split], y[:split], (x[split:], y[split:])
        if validation_data is not None:
            if len(validation_data) != 2:
                raise ValueError("fit: argument validation_data must be a tuple (x_val, y_val)")
            val_x = self._check_x(validation_data[0])
            val_y = self._check_y(validation_data[1], len(val_x))
        count = len(x)
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
            feeder = BatchFeeder(x, y, order, batch_size)
            for step, (x_batch, y_batch) in enumerate(feeder.batches()):
                size = len(x_batch)
                plan = self._plan(True, size)
                plan.use_input(x_batch, y_batch)
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
                val_loss, val_accuracy = self._evaluate_arrays(val_x, val_y, batch_size)
                epoch_logs["val_loss"] = val_loss
                for name in accuracy_names:
                    epoch_logs[f"val_{name}"] = val_accuracy
            callback_list.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        callback_list.on_train_end()
        return self.history

    # -- inference ----------------------------------------------------------------------------
    def _predict_arrays(self, x, batch_size, on_batch=None):
        """Outputs for all of x; `on_batch(index, start, outputs)` after each batch."""
        outputs = np.empty((len(x), *self.output.shape[1:]), dtype=np.float32)
        for index, start in enumerate(range(0, len(x), batch_size)):
            chunk = x[start:start + batch_size]
            plan = self._plan(False, len(chunk))
            plan.inputs[...] = chunk
            outputs[start:start + len(chunk)] = plan.predict_step()
            if on_batch is not None:
                on_batch(index, start, outputs[start:start + len(chunk)])
        return outputs

    def _evaluate_arrays(self, x, y, batch_size, callback_list=None):
        def report(index, start, probabilities):
            labels = y[start:start + len(probabilities)]
            logs = {"loss": float(np.mean(losses_module.categorical_crossentropy(
                labels, probabilities))), "size": len(probabilities)}
            for name in self.metric_names:
                logs[name] = float(np.mean(metrics_module.categorical_accuracy(
                    labels, probabilities)))
            callback_list.on_test_batch_end(index, logs)

        probabilities = self._predict_arrays(x, batch_size,
                                             report if callback_list is not None else None)
        loss = float(np.mean(losses_module.categorical_crossentropy(y, probabilities)))
        accuracy = float(np.mean(metrics_module.categorical_accuracy(y, probabilities)))
        return loss, accuracy

    def predict(self, x, batch_size=None, verbose=0):
        self.build()
        x = self._check_x(x)
        return self._predict_arrays(x, int(batch_size or 32))

    def evaluate(self, x=None, y=None, batch_size=None, verbose=1, return_dict=False):
        """Returns the loss, or [loss, *metrics] when compiled with metrics (as in Keras)."""
        if not self.compiled:
            raise RuntimeError("evaluate: call compile() first")
        x = self._check_x(x)
        y = self._check_y(y, len(x))
        batch_size = int(batch_size or 32)
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(add_progbar=verbose != 0, model=self, verbose=verbose,
                                     epochs=1, steps=-(-len(x) // batch_size))
        callback_list.on_test_begin()
        loss, accuracy = self._evaluate_arrays(x, y, batch_size, callback_list)
        results = {"loss": loss, **{name: accuracy for name in self.metric_names}}
        callback_list.on_test_end(results)
        if return_dict:
            return results
        return list(results.values()) if self.metric_names else loss

    # -- weights ------------------------------------------------------------------------------
    @property
    def weights(self):
        self.build()
        return [w for layer in self.layers for w in layer.weights]

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        own = self.weights
        if len(weights) != len(own):
            raise ValueError(f"{self.name}.set_weights: expected {len(own)} arrays, got "
                             f"{len(weights)}")
        for weight, value in zip(own, weights, strict=True):
            weight.assign(value)

    def count_params(self):
        return int(sum(np.prod(w.shape) for w in self.weights))

    def summary(self, print_fn=print):
        self.build()
        rows = [(f"{layer.name} ({type(layer).__name__})", str(layer.output_shape),
                 layer.count_params()) for layer in self.layers]
        line = "_" * 65
        print_fn(f'Model: "{self.name}"')
        print_fn(line)
        print_fn(f"{'Layer (type)':<30}{'Output Shape':<22}{'Param #':>13}")
        print_fn("=" * 65)
        for name, shape, count in rows:
            print_fn(f"{name:<30}{shape:<22}{count:>13,}")
        print_fn("=" * 65)
        print_fn(f"Total params: {self.count_params():,}")
