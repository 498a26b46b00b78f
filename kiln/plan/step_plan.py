"""StepPlan: a model compiled for one batch shape into a flat list of bound calls.

Training plan:  input reorder -> forward (fused primitives) -> loss head -> backward in
                reverse -> optimizer update over the packed parameter arena.
Inference plan: input reorder -> forward (forward_inference primitives) -> output reorder.

The convolutional front (the per-image ops from the input on) may run in sub-batches so its
tensors stay in cache between calls (see sub_batches.py).

Everything is allocated while the plan is built; `train_step()` / `predict_step()` only run
the list. `data_format` changes nothing but the descriptor of the input (and output) edge.
"""

import time

import numpy as np

from ..binding import constants as dnnl
from ..binding.engine import wait
from ..binding.library import lib
from ..binding.memory import Memory, MemoryDesc
from ..ops.tensor import CHANNELS_LAST, Tensor
from . import sub_batches
from .builder import PlanBuilder
from .sub_batches import SubBatchUnsupported


def logical_dims(keras_shape, data_format):
    """Keras shape (batch first) -> oneDNN logical dims (N, C, H, W)."""
    if len(keras_shape) == 4 and data_format == CHANNELS_LAST:
        n, h, w, c = keras_shape
        return (n, c, h, w)
    return tuple(keras_shape)


def plain_desc(tensor_dims, data_format, data_type=dnnl.f32):
    """The user's (numpy, C-order) layout of a logical tensor."""
    if len(tensor_dims) == 4:
        tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
        return MemoryDesc.with_tag(tensor_dims, data_type, tag)
    return MemoryDesc.with_tag(tensor_dims, data_type)


class StepPlan:
    """Args:
        ops: the model's ops in order (each with `forward(builder, x, need_input_grad)`).
        input_shape: Keras input shape including the batch size.
        data_format: 'channels_last' or 'channels_first' (only the input/output edges).
        parameters: the model's ParameterStore.
        loss_head: for training, an op with `forward(builder, logits, labels)`; the last op
            (the softmax it fuses) is then not run in training.
        optimizer: for training, a runtime updater with `apply(values, grads)`.
        label_shape: for training, the shape of the labels buffer (batch, classes).
        data_type: dnnl.f32, or dnnl.bf16 for bf16 activations and conv/dense inputs (weights,
            their gradients and the optimizer stay f32).
        sub_batch: images per sub-batch of the convolutional front; None chooses (see
            sub_batches.py), 0 runs the whole batch at once.
    """

    def __init__(self, ops, input_shape, data_format, parameters, loss_head=None,
                 optimizer=None, label_shape=None, data_type=dnnl.f32, sub_batch=None):
        start = time.perf_counter()
        ops = list(ops)
        forward_ops = ops[:-1] if loss_head is not None else ops
        dims = logical_dims(input_shape, data_format)
        itemsize = 2 if data_type == dnnl.bf16 else 4
        sliced, images = sub_batches.choose(forward_ops, dims, itemsize)
        if sub_batch is not None:
            sliced, images = (sliced, sub_batch) if sub_batch else (0, dims[0])
        if sliced and dims[0] % images:
            raise ValueError(f"sub_batch={images} does not divide the batch of {dims[0]}")
        try:
            self._build(ops, forward_ops, input_shape, dims, data_format, parameters,
                        loss_head, optimizer, label_shape, data_type, sliced, images)
        except SubBatchUnsupported:
            # a layout that does not keep images back to back: plan the whole batch at once
            self._build(ops, forward_ops, input_shape, dims, data_format, parameters,
                        loss_head, optimizer, label_shape, data_type, 0, dims[0])
        self.build_seconds = time.perf_counter() - start

    def _build(self, ops, forward_ops, input_shape, dims, data_format, parameters, loss_head,
               optimizer, label_shape, data_type, sliced, images):
        self.training = loss_head is not None
        self.parameters = parameters
        self.optimizer = optimizer
        self.sub_batch = images if sliced else 0
        builder = PlanBuilder(parameters, training=self.training, data_type=data_type)
        self.builder = builder
        self.input_memory = Memory(plain_desc(dims, data_format))
        self.inputs = self.input_memory.as_array().reshape(input_shape)
        self._input_slices = []

        tensor = Tensor(self.input_memory, data_format)
        backwards = []
        seen_parameters = False
        if sliced:
            tensor, backward, seen_parameters = self._plan_sub_batches(
                builder, forward_ops[:sliced], tensor, dims[0] // images)
            backwards.append(backward)
        for op in forward_ops[sliced:]:
            has_parameters = bool(op.parameter_dims(tensor.dims))
            # The first layers with weights need no input gradient: nothing before them learns.
            tensor, backward = op.forward(builder, tensor, need_input_grad=seen_parameters)
            backwards.append(backward)
            seen_parameters = seen_parameters or has_parameters
        if self.training:
            self.labels = np.zeros(label_shape, dtype=np.float32)
            self.outputs, self.stats, loss_backward = loss_head.forward(builder, tensor,
                                                                        self.labels)
            grad = loss_backward()
            for backward in reversed(backwards):
                grad = backward(grad)
                if grad is None:
                    break
        else:
            output_desc = plain_desc(tensor.dims, tensor.data_format)
            # A view of the plan's buffer, valid until the next step (predict() copies it out).
            output = builder.reorder(tensor.memory, output_desc, "output")
            self.outputs = output.as_array().reshape(tensor.keras_shape)
        builder.finish()
        parameters.pack()
        self.calls = builder.forward_calls + builder.backward_calls
        self._runs = [call.run for call in self.calls]

    def _plan_sub_batches(self, builder, ops, tensor, count):
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
                    has_parameters = bool(op.parameter_dims(part.dims))
                    first_call = len(builder.forward_calls)
                    part, backward = op.forward(builder, part, need_input_grad=seen)
                    if position == 0 and recompute:
                        replays.append([call.relabeled(f"{call.label} again for backward")
                                        for call in builder.forward_calls[first_call:]])
                    chain.append(backward)
                    seen = seen or has_parameters
            chains.append(chain)
        whole = Tensor(builder.whole(part.memory), part.data_format, part.flattened,
                       part.activation)

        def backward(output_grad):
            for index, chain in enumerate(chains):
                with builder.sub_batch("backward", index, count):
                    for call in replays[index] if replays else ():
                        builder.add_backward(call)
                    grad = builder.batch_slice(output_grad, index, count)
                    for step in reversed(chain):
                        grad = step(grad)
                        if grad is None:
                            break
            builder.add_sub_batch_sums()
            return None  # the sliced ops start at the input: nothing before them learns

        return whole, backward, seen

    def use_input(self, x, y=None):
        """Read the next step's input from `x` (a C-contiguous, 64-byte aligned float32 array
        of the plan's input shape) without copying it; copy the small labels `y`."""
        if x.shape != self.inputs.shape or x.dtype != np.float32 or x.ctypes.data % 64:
            raise ValueError(f"plan input must be an aligned float32 array of shape "
                             f"{self.inputs.shape}, got {x.dtype} {x.shape}")
        lib.dnnl_memory_set_data_handle(self.input_memory.handle, x.ctypes.data)
        self.input_memory.storage = x.reshape(-1).view(np.uint8)
        for index, part in self._input_slices:
            offset = index * part.desc.size
            lib.dnnl_memory_set_data_handle(part.handle, x.ctypes.data + offset)
            part.storage = self.input_memory.storage[offset:offset + part.desc.size]
        self.inputs = x
        if y is not None:
            self.labels[...] = y

    def train_step(self):
        """Run forward, loss, backward and the update on `self.inputs` / `self.labels`.

        Returns the stats array (mean loss, mean accuracy) of this batch."""
        for run in self._runs:
            run()
        self.optimizer.apply(self.parameters.values_arena, self.parameters.grads_arena)
        return self.stats

    def predict_step(self):
        for run in self._runs:
            run()
        wait()
        return self.outputs

    def profile(self, steps=10):
        """Median seconds per call label over `steps` training (or inference) steps, plus
        'optimizer update' and 'outside calls' (Python and dispatch around the list)."""
        samples = {call.label: [] for call in self.calls}
        samples["optimizer update"] = []
        overhead = []
        for _ in range(steps):
            step_start = time.perf_counter()
            inside = 0.0
            per_label = dict.fromkeys(samples, 0.0)  # sub-batches repeat a label: add them
            for call in self.calls:
                start = time.perf_counter()
                call.run()
                elapsed = time.perf_counter() - start
                per_label[call.label] += elapsed
                inside += elapsed
            for label in {call.label for call in self.calls}:
                samples[label].append(per_label[label])
            if self.training:
                start = time.perf_counter()
                self.optimizer.apply(self.parameters.values_arena, self.parameters.grads_arena)
                elapsed = time.perf_counter() - start
                samples["optimizer update"].append(elapsed)
                inside += elapsed
            overhead.append(time.perf_counter() - step_start - inside)
        result = {label: float(np.median(v)) for label, v in samples.items() if v}
        result["outside calls"] = float(np.median(overhead))
        return result

    def describe(self):
        """One line per call: what a step runs, in order (the plan as a reader sees it)."""
        return [call.label for call in self.calls]
