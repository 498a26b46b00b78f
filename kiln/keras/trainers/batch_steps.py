"""One batch of fit / evaluate through a plan with losses: the labels and sample weights go
into the plan's buffers (checked first, so a bad batch changes no weight), the step runs, and
the loss trackers and metrics take the batch in.

What fit and evaluate report follows Keras 3: `loss` is the mean over the batches so far of
the weighted total loss (weighted by batch size), `<output>_loss` the same per output when
there are several, and each metric its running result since the epoch (or evaluate) began.
"""

import math

import numpy as np

from ...ops.losses import LOSS
from ...ops.losses.label_checks import check_class_ids
from ...plan.interrupts import interrupts_deferred
from .compile_utils import output_names
from .loss_inputs import fill_loss_inputs

# float64 values below this round to a finite float32 (the largest, plus half its last unit)
FLOAT32_ROUNDS_TO_FINITE = 2.0**128 - 2.0**103


def as_float32(loss):
    """A batch's loss as the float32 the model computes in (the heads sum in float64): one
    beyond float32's range is inf, as in Keras, so the running mean turns inf and
    TerminateOnNaN stops before the float32 gradients of the next batch overflow the
    weights. (The range is tested here: np.errstate around the cast cost more than the rest
    of a step's loss bookkeeping.)"""
    loss = float(loss)
    if abs(loss) < FLOAT32_ROUNDS_TO_FINITE:
        return float(np.float32(loss))
    return loss if loss != loss else math.copysign(math.inf, loss)


class LossTrackers:
    """The `loss` and per-output `<name>_loss` means (Keras' loss trackers)."""

    def __init__(self, compile_loss):
        self.names = ["loss"] + compile_loss.metric_names
        self.state = np.zeros((len(self.names), 2), dtype=np.float64)

    def reset(self):
        self.state[...] = 0.0

    def update(self, plan, size):
        self.state[0, 0] += as_float32(plan.stats[0]) * size
        if len(self.names) > 1:  # (the heads of outputs only metrics read come last)
            for row, view in enumerate(plan.heads[:len(self.names) - 1], start=1):
                self.state[row, 0] += as_float32(view.stats[LOSS]) * size
        self.state[:, 1] += size

    def results(self):
        return {name: float(total / count) if count else 0.0
                for name, (total, count) in zip(self.names, self.state, strict=True)}


class BatchRunner:
    """Feeds batches of (xs, ys, sample_weights) lists to a model's plans.

    Args:
        model: the compiled model (its _plan, _compile_loss, _compile_metrics).
        kind: 'fit' (training steps) or 'evaluate' (losses and metrics without training).
        owner: the method the user called, for messages ('train_on_batch', 'fit (validation
            data)', ...); the kind by default.
    """

    def __init__(self, model, kind, owner=None):
        self.model = model
        self.kind = kind
        self.owner = owner or kind
        self.trackers = LossTrackers(model._compile_loss)
        self.plan = None  # the last batch's
        self.metrics = model._compile_metrics

    def reset(self):
        self.trackers.reset()
        self.metrics.reset_state()
        for metric in self.model._logged_metrics()[1]:  # the model's own (model_metrics.py)
            metric.reset_state()

    def run(self, xs, ys, sample_weights, step, epoch=None):
        """One step on this batch (`step` None: the only one); returns the batch size."""
        # from the labels going in to the stats read back, no other thread may run a plan of
        # this model (its buffers, and the weights a training step updates, are shared)
        with self.model._plans.lock:
            return self._run(xs, ys, sample_weights, step, epoch)

    def _run(self, xs, ys, sample_weights, step, epoch):
        training = self.kind == "fit"
        size = len(xs[0])
        loss_call = self.model._loss_call(ys, sample_weights, training)
        plan = self.model._plan(training, size, evaluate=not training, inputs=xs,
                                loss_call=loss_call)
        self.plan = plan  # (a compute_metrics override's logs are the last batch's)
        if training:  # set during a data-parallel fit (keras/distribution/)
            plan.gradient_reducer = getattr(self.model, "_gradient_reducer", None)
        where = (f"{self.owner}, epoch {epoch + 1}, batch {step}" if epoch is not None
                 else f"{self.owner}, batch {step}" if step is not None else self.owner)
        self._fill_labels(plan, ys, where)
        self._fill_weights(plan, sample_weights, where)
        fill_loss_inputs(plan, ys, sample_weights, where)
        plan.use_input(xs)
        # Ctrl-C waits until the metrics and loss means have taken the batch in too
        with interrupts_deferred():
            if training:
                # the model's step hook, when set (a kiln.profiler Session), runs the step
                hook = getattr(self.model, "_step_hook", None)
                if hook is None:
                    plan.train_step()
                else:
                    hook(plan)
            else:
                plan.evaluate_step()
            for update in plan.metric_updates:
                update()
            self.trackers.update(plan, size)
        return size

    def logs(self):
        compiled, own = self.model._logged_metrics()
        logs = {**self.trackers.results(), **self.metrics.results()} if compiled else {}
        for metric in own:
            result = metric.result()
            logs.update(result if isinstance(result, dict) else {metric.name: result})
        return self.model._computed_logs(self.plan, logs)

    def names(self):
        compiled, own = self.model._logged_metrics()
        names = (self.trackers.names + [name for name, _, _, _ in self.metrics.entries]
                 if compiled else [])
        return names + [metric.name for metric in own if metric.name not in names]

    # -- labels and weights ---------------------------------------------------------------------
    def _fill_labels(self, plan, ys, where):
        outputs = self.model.outputs
        if not plan.heads:  # the model's added losses alone (add_loss, loss=None)
            return
        if ys is None:
            raise ValueError(f"{where}: argument y is required to compute the loss")
        if len(ys) != len(outputs):
            raise ValueError(f"{where}: argument y must hold {len(outputs)} arrays, one per "
                             f"output, got {len(ys)}")
        for view in plan.heads:
            index = view.loss.output
            argument = "y" if len(outputs) == 1 else f"y[{index}]"
            name = output_names(self.model)[index]
            view.labels[...] = self._labels(ys[index], view, argument, where, name,
                                            outputs[index].shape[1:])

    @staticmethod
    def _labels(y, view, argument, where, output_name, output_shape):
        """`y` reshaped to the head's label buffer, or a ValueError saying what fits."""
        head = view.loss.head
        expected = view.labels.shape
        context = (f"{where}: argument {argument} for loss '{head.name}' on output "
                   f"'{output_name}'")
        array = np.asarray(y)
        if head.sparse:
            if array.ndim == len(expected) + 1 and array.shape[-1] == 1:
                array = array.reshape(array.shape[:-1])
            if array.shape != expected:
                hint = (" (one-hot labels: use categorical_crossentropy, or pass class ids)"
                        if array.ndim == len(expected) + 1
                        and array.shape[-1] == output_shape[-1] else "")
                shapes = (f"({expected[0]},) or ({expected[0]}, 1)" if len(expected) == 1
                          else f"{expected}")
                raise ValueError(f"{context} must be class ids of shape {shapes}, got shape "
                                 f"{array.shape}{hint}")
            check_class_ids(np.ascontiguousarray(array, dtype=np.float32), output_shape[-1],
                            context)
            return array
        if array.ndim == 1 and expected[1:] == (1,):
            array = array.reshape(expected)
        if array.shape != expected:
            hint = ""
            if array.ndim == 1 or (array.ndim == 2 and array.shape[1] == 1 and
                                   expected[1] > 1):
                hint = (" (class ids: use sparse_categorical_crossentropy, or one-hot encode "
                        "them with keras.utils.to_categorical)")
            raise ValueError(f"{context} must have shape {expected} to match the output "
                             f"{(None, *output_shape)}, got {array.shape}{hint}")
        return array

    @staticmethod
    def _fill_weights(plan, sample_weights, where):
        if sample_weights is None:
            plan.set_sample_weights(None)
            return
        arrays = []  # all checked before any is written
        for view in plan.heads:
            weights = sample_weights[view.loss.output if len(sample_weights) > 1 else 0]
            weights = np.asarray(weights)
            if weights.ndim == view.weights.ndim + 1 and weights.shape[-1] == 1:
                weights = weights.reshape(weights.shape[:-1])
            if weights.shape != view.weights.shape:
                per, hint = "sample", ""
                if getattr(view, "pixels", False):
                    per = "pixel of an image output, as Keras 3 multiplies the loss per pixel"
                    if weights.shape == view.weights.shape[:1]:
                        hint = (" (a weight per sample: np.broadcast_to(w[:, None, None], "
                                f"{view.weights.shape}))")
                elif view.weights.ndim > 1:
                    per = "step of a sequence output"
                raise ValueError(f"{where}: argument sample_weight must have one weight per "
                                 f"{per}, shape {view.weights.shape}, got {weights.shape}{hint}")
            arrays.append(weights)
        plan.set_sample_weights(arrays)
