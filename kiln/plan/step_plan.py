"""StepPlan: a model's graph compiled for one batch shape into a flat list of bound calls.

Training plan:  input reorder -> forward (fused primitives, nodes in topological order) ->
                loss heads (one per output with a loss, see loss_plan.py), add_loss terms
                (added_losses.py) and metric kernels ->
                backward in reverse order, gradients summed where a tensor has several
                consumers -> optimizer update over the packed parameter arena.
Evaluation plan: the same loss heads and metric kernels after a forward_inference forward,
                no backward (evaluate() computes loss and metrics with the training kernels).
Inference plan: input reorder -> forward (forward_inference primitives) -> output reorders.

The convolutional front (the per-image ops from the input on) may run in sub-batches so its
tensors stay in cache between calls (see sub_batches.py). Buffers whose lifetimes do not
overlap share bytes (see liveness.py).

Everything is allocated while the plan is built; `train_step()` / `predict_step()` only run
the list. `data_format` changes nothing but the descriptors of the input and output edges.

The list is `entries` (step_list.py): every call with its label, phase and owner, then a
training plan's update phase. The plain step runs their bound callables from one prebuilt
tuple; a timed step (timed_step.py) and kiln.profiler go through the same entries.
"""

import time

import numpy as np

from ..binding import constants as dnnl
from ..binding.engine import wait
from ..binding.memory import Memory
from ..graph.rules import fuse_heads
from ..ops.tensor import CHANNELS_LAST, Tensor, logical_dims  # noqa: F401 (re-exported)
from . import sub_batches
from .added_losses import plan_added_losses
from .builder import PlanBuilder
from .interrupts import interrupts_deferred
from .loss_inputs import plan_loss_inputs, plan_observed
from .loss_plan import OutputLoss, plan_heads, resolve
from .plan_inputs import (  # noqa: F401 (plain_desc re-exported)
    cast_input,
    is_integer_input,
    kernels_read_inputs,
    plain_desc,
    use_input,
)
from .step_list import CallOwners, OwnedGradients, call_entries, update_entries
from .sub_batches import SubBatchUnsupported
from .timed_step import median_seconds, timed_step
from .traced_penalties import plan_user_penalties
from .weight_penalties import WeightConstraints, WeightPenalties

# Keras' backend epsilon in its norm constraints: w * desired / (epsilon + norm)
CONSTRAINT_EPSILON = 1e-7


def trainable_parameters(op, dims, parameters):
    """Whether `op` (on input dims) has a weight the step updates."""
    return any(name in parameters and parameters.trainable(name)
               for name in op.parameter_names(dims))


class StepPlan:
    """Args:
        graph: the model's Graph after fusion (kiln.graph.topology.Graph; with `losses`,
            after the loss-head rules too, for the heads that apply the final activation).
        batch_size: samples per step.
        parameters: the model's ParameterStore.
        loss_head: shorthand for `losses=[OutputLoss(loss_head)]` (a model with one output).
        optimizer: for training, a runtime updater with `apply(values, grads)`; without it a
            plan with losses is an evaluation plan (forward_inference, no backward).
        data_type: dnnl.f32, or dnnl.bf16 for bf16 activations and conv/dense inputs (weights,
            their gradients and the optimizer stay f32).
        sub_batch: images per sub-batch of the convolutional front; None chooses (see
            sub_batches.py), 0 runs the whole batch at once.
        losses: kiln.plan.loss_plan.OutputLoss per output that has a loss.
        metrics: callables `metric(builder, views)` that add metric kernels reading the
            heads' HeadViews (outputs, labels, sample weights), after the heads.

    `gradient_reducer`, when set, is called between backward and the optimizer update, with
    the step's gradients in `parameters.grads_arena` (data-parallel training sums them across
    processes there, see distributed/collective.py).

    `weighted`: whether a head's sample weights hold other values than ones (see
    set_sample_weights).
    """

    _reducer = None
    weighted = False
    training_forward = False  # see TrainingForwardPlan

    def __init__(self, graph, batch_size, parameters, loss_head=None, optimizer=None,
                 data_type=dnnl.f32, sub_batch=None, losses=None, metrics=()):
        start = time.perf_counter()
        if loss_head is not None:
            losses = [OutputLoss(loss_head)]
        self.losses = list(losses or ())
        if self.losses and graph.fused_heads is None:
            # a graph no one rewrote for these losses (a model does, with its rules): the
            # table's loss-head rules decide which heads apply the final activation
            graph = fuse_heads(graph, {loss.output: loss.head for loss in self.losses})
        self.graph = graph
        scored = bool(self.losses or graph.added_losses)  # heads or add_loss terms
        self.training = scored and optimizer is not None
        self.evaluating = scored and optimizer is None
        self.heads = resolve(graph, self.losses, batch_size) if self.losses else []
        # nodes whose op a loss head changed (graph.fused_heads): they end the sliced front
        self._head_nodes = {id(fused.node) for fused in (graph.fused_heads or {}).values()
                            if fused.node is not None}
        self.metrics = list(metrics)
        first = graph.inputs[0]
        dims = (batch_size, *first.dims[1:])
        itemsize = 2 if data_type == dnnl.bf16 else 4
        chain = []
        for node in sub_batches.front_chain(graph):  # a node the heads change ends the sliced front
            if id(node) in self._head_nodes:
                break
            chain.append(node)
        sliced, images = sub_batches.choose([node.op for node in chain], dims, itemsize)
        if is_integer_input(first):  # the sliced front reads the input as it is
            sliced, images = 0, batch_size
        if sub_batch is not None:
            sliced, images = (sliced, sub_batch) if sub_batch else (0, batch_size)
        if sliced and batch_size % images:
            raise ValueError(f"sub_batch={images} does not divide the batch of {batch_size}")
        arguments = (graph, batch_size, parameters, optimizer, data_type, chain)
        try:
            self._build(*arguments, sliced, images)
        except SubBatchUnsupported:
            # a layout that does not keep images back to back: plan the whole batch at once
            self._build(*arguments, 0, batch_size)
        self.build_seconds = time.perf_counter() - start

    def _build(self, graph, batch_size, parameters, optimizer, data_type, chain, sliced,
               images):
        self.parameters = parameters
        self.optimizer = optimizer
        self.sub_batch = images if sliced else 0
        # regularization penalties: one-value float64 arrays written by kernels of the step
        # (weight and activity regularizers append them while they are planned), added to
        # the reported loss
        self.penalties = []
        builder = PlanBuilder(parameters, training=self.training or self.training_forward,
                              data_type=data_type)
        self.builder = builder
        owners = CallOwners(builder)  # which layer, loss or metric planned each call
        self._parameter_owners = {}   # parameter name -> the layer that reads it
        self._input_slices = []
        values, requires_grad = {}, {}
        self.input_memories, self.input_arrays = [], []
        for tensor in graph.inputs:
            input_type = dnnl.s32 if is_integer_input(tensor) else dnnl.f32
            memory = Memory(plain_desc((batch_size, *tensor.dims[1:]), tensor.data_format,
                                       input_type))
            self.input_memories.append(memory)
            self.input_arrays.append(memory.as_array().reshape(batch_size, *tensor.shape[1:]))
            values[id(tensor)] = Tensor(memory, tensor.data_format, tensor.flattened)
            requires_grad[id(tensor)] = False
        self.input_memory, self.inputs = self.input_memories[0], self.input_arrays[0]
        # the labels and sample weights a compute_loss override reads (loss_inputs.py)
        self.loss_inputs = plan_loss_inputs(graph, batch_size, values, requires_grad)

        backwards = []  # (output tensor, input tensors, backward, arity) in forward order
        planned = set()
        if sliced:
            front = chain[:sliced]
            whole, backward, learns = self._plan_sub_batches(
                builder, owners, [node.op for node in front], values[id(graph.inputs[0])],
                batch_size // images)
            values[id(front[-1].output)] = whole
            requires_grad[id(front[-1].output)] = learns
            # (its backward claims its calls op by op)
            backwards.append((front[-1].output, [graph.inputs[0]], backward, 1, None))
            planned = {id(node) for node in front}
        # readers of each tensor: the graph's ops and the model's outputs (their losses)
        consumers = {}
        for tensor in [t for node in graph.nodes for t in node.inputs] + graph.ends:
            consumers[id(tensor)] = consumers.get(id(tensor), 0) + 1
        for key, value in values.items():  # the inputs, a sub-batched front's output
            value.consumers = consumers.get(key, 0)
        for node in graph.nodes:
            if id(node) in planned:
                continue
            op = node.op
            xs = [values[id(t)] if op.reads_integers or not is_integer_input(t)
                  else cast_input(builder, values, t) for t in node.inputs]
            needs = [requires_grad[id(t)] for t in node.inputs]
            many = op.arity is None
            with owners.claim(op.name, "forward"):
                output, backward = op.forward(builder, xs if many else xs[0],
                                              needs if many else needs[0])
            output.consumers = consumers.get(id(node.output), 0)
            values[id(node.output)] = output
            dims = [x.dims for x in xs] if many else xs[0].dims
            self._own_parameters(op, dims)
            requires_grad[id(node.output)] = any(needs) or trainable_parameters(
                op, dims, parameters)
            backwards.append((node.output, node.inputs, backward, 0 if many else 1, op.name))

        if self.training or self.evaluating:
            self._plan_losses(builder, owners, values, requires_grad)
            self.observed = plan_observed(builder, graph, values)  # for metrics, after steps
        if self.evaluating:
            plan_user_penalties(builder, parameters, owners)
        if self.training:
            grads = OwnedGradients(builder, requires_grad, owners)
            for tensor, grad in self._head_grads:
                grads.deliver([tensor], [grad])
            for output, inputs, backward, arity, owner in reversed(backwards):
                grad = grads.take(output)
                if grad is None:
                    continue
                if owner is None:
                    result = backward(grad)
                else:
                    with owners.claim(owner, "backward"):
                        result = backward(grad)
                grads.deliver(inputs, [result] if arity == 1 else result)
            plan_user_penalties(builder, parameters, owners)  # their gradients: parts
            builder.add_pending_sums()  # owned by the layer whose gradient each one writes
        elif not self.evaluating:
            self.output_arrays = []
            for tensor in graph.outputs:
                value = values[id(tensor)]
                desc = plain_desc(value.dims, value.data_format, flattened=value.flattened)
                # A view of the plan's buffer, valid until the next step (predict() copies it);
                # the reorder is no layer's (its entry's owner is None)
                output = builder.keep(builder.reorder(value.memory, desc, "output"))
                self.output_arrays.append(output.as_array().reshape(value.keras_shape))
            self.outputs = self.output_arrays[0]
        builder.finish()
        self._copy_inputs = kernels_read_inputs(self, builder)
        self.planned_bytes = dict(builder.planned_bytes)
        parameters.pack()
        # Keras adds the weights' l1 / l2 penalties and the activity penalties to the loss
        # (evaluation too); the weights' penalty gradients join the arena before the update,
        # and constraints project the weights after it
        self.penalties.extend(builder.loss_terms)
        self._penalty = [0.0]  # the weight penalties' sum, written by their entry
        self._penalties = WeightPenalties(parameters, gradients=self.training)
        self._constraints = WeightConstraints(parameters, CONSTRAINT_EPSILON) \
            if self.training else None
        self.calls = builder.forward_calls + builder.backward_calls
        self._call_entries = tuple(call_entries(owners, self._parameter_owners, parameters))
        self._arrange()

    def _own_parameters(self, op, dims):
        """Remember which layer reads each of `op`'s parameters: the sums of a parameter's
        gradient parts, planned after every layer's backward, are that layer's."""
        for name in op.parameter_names(dims):
            self._parameter_owners.setdefault(name, op.name)

    def _arrange(self):
        """`entries`: the calls, then the update phase; `_runs`: their callables, the tuple
        the plain step iterates. Again whenever the gradient reducer changes."""
        self.entries = self._call_entries + tuple(update_entries(self))
        self._runs = tuple(entry.run for entry in self.entries)

    @property
    def gradient_reducer(self):
        return self._reducer

    @gradient_reducer.setter
    def gradient_reducer(self, reducer):
        # the trainer sets it before every batch: the list changes only when it does
        if reducer is not self._reducer:
            self._reducer = reducer
            if hasattr(self, "_call_entries"):
                self._arrange()

    def set_sample_weights(self, weights=None):
        """Fill each head's sample weights from `weights` (one array per head, in `heads`'
        order, already checked), or with ones when None (only written when a batch before
        had weights)."""
        if weights is None:
            if self.weighted:
                for view in self.heads:
                    view.weights[...] = 1.0
                self.weighted = False
            return
        for view, array in zip(self.heads, weights, strict=True):
            view.weights[...] = array
        self.weighted = True

    def _plan_losses(self, builder, owners, values, requires_grad):
        """The loss heads, added losses and metric kernels after the forward (loss_plan.py)."""
        self._head_grads = []
        for view in self.heads:
            with owners.claim(view.loss.head.name, "loss"):
                self._head_grads.extend(plan_heads(builder, [view], values, self.training))
        self._head_grads.extend(plan_added_losses(builder, owners, self.graph.added_losses,
                                                  values, requires_grad, self.training))
        self.metric_updates = []  # after-step updates of metrics without a kernel
        for metric in self.metrics:
            # a metric planner may name itself; one planning several metrics is "metrics"
            with owners.claim(getattr(metric, "name", "metrics"), "metric"):
                self.metric_updates.extend(metric(builder, self.heads) or ())
        self.label_arrays = [view.labels for view in self.heads]
        self.weight_arrays = [view.weights for view in self.heads]
        self.output_arrays = [view.outputs for view in self.heads]
        # the one output's labels and outputs (bench, tests); none with added losses alone
        self.labels, self.outputs = next(zip(self.label_arrays, self.output_arrays,
                                             strict=True), (None, None))
        # (total loss, accuracy of the first head): the weighted total is summed after the
        # calls, with the regularization penalties (see _build)
        self.stats = np.zeros(2, dtype=np.float64)
        self._loss_weights = [view.loss.weight for view in self.heads]
        self._head_stats = [view.stats for view in self.heads]

    def _total_loss(self):
        stats = self.stats
        total = 0.0
        for weight, head in zip(self._loss_weights, self._head_stats, strict=True):
            total += weight * head[0]
        for penalty in self.penalties:
            total += penalty[0]
        stats[0] = total + self._penalty[0]
        stats[1] = self._head_stats[0][1] / len(self.labels) if self._head_stats else 0.0
        return stats

    def _plan_sub_batches(self, builder, owners, ops, tensor, count):
        """Plan `ops` once per sub-batch; returns the whole-batch output tensor, one backward
        for all the sub-batches, and whether the ops have parameters."""
        chains, replays = [], []
        # A first convolution with few input channels is cheaper to run again in backward than
        # to keep: its output then stays in a cached buffer shared by the sub-batches.
        recompute = self.training and len(ops) > 1 and sub_batches.recomputable(
            ops[0], tensor.dims)
        for index in range(count):
            with builder.sub_batch("forward", index, count):
                source = builder.batch_slice(tensor.memory, index, count)
                self._input_slices.append((index, source))
                part = Tensor(source, tensor.data_format)
                chain, seen = [], False
                for position, op in enumerate(ops):
                    if position and (not self.training or (position == 1 and recompute)):
                        # nothing reads this op's input later (inference keeps nothing; a
                        # recomputed output is made again before backward reads it)
                        builder.transient(part.memory)
                    has_parameters = trainable_parameters(op, part.dims, builder.parameters)
                    self._own_parameters(op, part.dims)
                    first_call = len(builder.forward_calls)
                    with owners.claim(op.name, "forward"):
                        part, backward = op.forward(builder, part, need_input_grad=seen)
                    if position == 0 and recompute:  # (values derived from weights stay)
                        replays.append([call.relabeled(f"{call.label} again for backward")
                                        for call in builder.forward_calls[first_call:]
                                        if id(call) not in builder.derived_calls])
                    chain.append(backward)
                    seen = seen or has_parameters
            chains.append(chain)
        whole = Tensor(builder.whole(part.memory), part.data_format, part.flattened,
                       part.activation)

        def backward(output_grad):
            for index, chain in enumerate(chains):
                with builder.sub_batch("backward", index, count):
                    with owners.claim(ops[0].name, "backward"):
                        for call in replays[index] if replays else ():
                            builder.add_backward(call)
                    grad = builder.batch_slice(output_grad, index, count)
                    for op, step in zip(reversed(ops[:len(chain)]), reversed(chain),
                                        strict=True):
                        with owners.claim(op.name, "backward"):
                            grad = step(grad)
                        if grad is None:
                            break
            builder.add_sub_batch_sums()  # owned by the layer whose gradient each one writes
            return None  # the sliced ops start at the input: nothing before them learns

        return whole, backward, seen

    def use_input(self, x, y=None):
        """Read the next step's input from `x` (a C-contiguous, 64-byte aligned float32 array
        of the plan's input shape, or a list of them for several inputs) without copying it;
        copy the small labels `y` (see plan_inputs.py)."""
        use_input(self, x, y)

    def train_step(self):
        """Run forward, loss, backward and the update on `self.inputs` / `self.labels`.

        Returns the stats array (total loss, first head's accuracy) of this batch; each
        head's own stats are in `self.heads[i].stats`. Ctrl-C waits for the step to end."""
        with interrupts_deferred():  # a torn step: weights and iterations out of step
            for run in self._runs:
                run()
            return self._total_loss()

    def timed_train_step(self, clock=time.perf_counter_ns):
        """train_step with `clock` read around every entry: (stats, [(start, end)] per entry
        of `entries`), the weights updated exactly as train_step updates them."""
        with interrupts_deferred():
            times = timed_step(self, clock)
            return self._total_loss(), times

    def evaluate_step(self):
        """An evaluation plan's forward, losses and metrics, and its weight penalties added
        to the loss; returns the stats as train_step."""
        for run in self._runs:
            run()
        return self._total_loss()

    def predict_step(self):
        for run in self._runs:  # an inference plan's entries are its calls
            run()
        wait()
        return self.outputs

    def profile(self, steps=10):
        """Median seconds per entry label over `steps` steps run by timed_step (a training
        step's update phase as 'optimizer update', 'weight penalties', ...), plus 'outside
        calls' (Python and dispatch around the list)."""
        return median_seconds(self, steps)

    def describe(self):
        """One line per call: what a step runs, in order (the plan as a reader sees it)."""
        return [call.label for call in self.calls]



class TrainingForwardPlan(StepPlan):
    """An inference plan whose ops run as in training (Keras's `model(x, training=True)`:
    dropout drops, batch norm normalizes with the batch's statistics and updates its moving
    ones); no loss, no backward, no update."""

    training_forward = True
