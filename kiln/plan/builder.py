"""PlanBuilder: what ops talk to while a step plan is being built.

It is the front of the op-to-plan contract (kiln/ops/base.py's Builder protocol: the methods
there are documented once, for the ops that call them) over collaborators with one concern
each:

    buffers.Buffers                   whole-batch buffers, the scratchpad, the liveness arena
    sub_batch_buffers.SubBatchBuffers which sub-batch is planned, and its buffers
    primitives.Primitives             cached primitives bound with the shared scratchpad
    primitives.Reorders               tensors reordered into the layouts readers want
    parameter_views.ParameterViews    parameters in primitive layouts, values derived from them
    gradient_sums.GradientSums        where gradients are written, fan-outs, sums of parts

The builder itself keeps what the plan is made of: the forward and backward call lists, the
labels of reorders and the activity-loss terms. Buffers are allocated while the plan is
built, once; running the plan afterwards allocates nothing.
"""

import functools

import numpy as np

from ..binding import constants as dnnl
from .buffers import Buffers
from .calls import KernelCall, MemoryKernelCall
from .gradient_sums import DeferredReorder, GradientSums
from .parameter_views import ParameterViews
from .primitives import Primitives, Reorders
from .sub_batch_buffers import SubBatchBuffers

__all__ = ["KernelCall", "MemoryKernelCall", "PlanBuilder"]  # the call types step_plan reads


class PlanBuilder:
    """Collects forward and backward calls over buffers allocated once.

    Args:
        parameters: the model's ParameterStore (values, gradients, layouts).
        training: build forward_training primitives (with workspaces) and backward calls.
        data_type: oneDNN data type of activations: f32, or bf16 under mixed precision.
    """

    def __init__(self, parameters, training=True, data_type=dnnl.f32):
        self.parameters = parameters
        self.training = training
        self.data_type = data_type
        self.prop_kind = dnnl.forward_training if training else dnnl.forward_inference
        self.forward_calls = []
        self.backward_calls = []
        self.reorder_labels = []
        self.loss_terms = []         # see loss_term()
        self.planned_bytes = {}      # see finish()
        self.buffers = Buffers()
        self.sub_batches = SubBatchBuffers()
        self.primitives = Primitives(self.buffers)
        # Collaborators get functions over the builder's parts, never its bound methods: a
        # collaborator holding the builder is a reference cycle, and the builder holds the
        # plan's arena, which a plan dropped from a model's cache would then keep until the
        # garbage collector ran
        self.reorders = Reorders(self.primitives, _allocator(self.sub_batches, self.buffers),
                                 self.forward_calls.append,
                                 functools.partial(_append_backward, self.backward_calls),
                                 self.reorder_labels, training, self.sub_batches)
        self.parameter_views = ParameterViews(parameters, training, self.reorders,
                                              self.sub_batches, self.forward_calls)
        self.gradients = GradientSums(parameters, self.parameter_views.derived_values,
                                      self.buffers.new, self.sub_batches, self.primitives,
                                      self.backward_calls, self.reorder_labels)

    # -- buffers ----------------------------------------------------------------------------
    def allocate(self, desc):
        return _allocator(self.sub_batches, self.buffers)(desc)

    def keep(self, memory):
        return self.buffers.keep(memory)

    def transient(self, memory):
        return self.sub_batches.transient(memory)

    # -- primitives and calls ---------------------------------------------------------------
    def primitive(self, key, make_pd):
        return self.primitives.get(key, make_pd)

    def bind(self, primitive, args, label):
        return self.primitives.bind(primitive, args, label)

    def add_forward(self, call):
        self.forward_calls.append(call)

    def add_backward(self, call):
        _append_backward(self.backward_calls, call)

    def kernel(self, function, arguments, label):
        return KernelCall(function, arguments, label)

    def memory_kernel(self, function, arguments, label):
        return MemoryKernelCall(function, arguments, label)

    def loss_term(self):
        term = np.zeros(1, dtype=np.float32)
        self.loss_terms.append(term)
        return term

    # -- layouts ----------------------------------------------------------------------------
    def reorder(self, source, desc, label, backward=False):
        return self.reorders.reorder(source, desc, label, backward)

    def overwrite(self, memory):
        return self.reorders.overwrite(memory)

    # -- parameters -------------------------------------------------------------------------
    def param(self, name, desc):
        return self.parameter_views.value(name, desc)

    def derived(self, key, make):
        return self.parameter_views.derived(key, make)

    @property
    def derived_calls(self):
        """id() of the forward calls derived() planned (step_plan does not replay them)."""
        return self.parameter_views.derived_calls

    def wants_grad(self, name):
        return self.parameter_views.wants_grad(name)

    def master_layout(self, name, desc):
        self.parameter_views.master_layout(name, desc)

    # -- gradients --------------------------------------------------------------------------
    def param_grad(self, name, desc):
        return self.gradients.param_grad(name, desc)

    def derived_grad(self, key, desc):
        return self.gradients.derived_grad(key, desc)

    def after_gradient_sums(self, key, plan):
        self.gradients.after_gradient_sums(key, plan)

    def writable(self, memory):
        return self.gradients.writable(memory)

    def share(self, memory):
        self.gradients.share(memory)

    def add_sum(self, target, sources, label):
        self.gradients.add_sum(target, sources, label)

    def add_gradient_sum(self, target, sources, label):
        self.gradients.add_gradient_sum(target, sources, label)

    def take_gradient_sum(self, grad):
        return self.gradients.take_gradient_sum(grad)

    def add_pending_sums(self):
        """One sum per gradient written in parts, then what after_gradient_sums() deferred
        (step_plan calls it after backward)."""
        self.gradients.add_pending_sums()

    add_sub_batch_sums = add_pending_sums

    # -- sub-batches (step_plan's) ----------------------------------------------------------
    def sub_batch(self, phase, index, count):
        """A context in which slice `index` of `count` equal slices of the batch is planned
        (see sub_batch_buffers.py). Parameter gradients of slices after the first are added
        to the first one's by add_sub_batch_sums()."""
        return self.sub_batches.planning(phase, index, count)

    def batch_slice(self, memory, index, count):
        """Images [index * n / count, (index + 1) * n / count) of a whole-batch memory."""
        return self.sub_batches.batch_slice(memory, index, count)

    def whole(self, memory):
        """The whole batch of which `memory` (a sub-batch buffer or slice) is one part."""
        return self.sub_batches.whole(memory)

    # -- the end ----------------------------------------------------------------------------
    def finish(self):
        """Lay the buffers out (shared arena, one scratchpad) and set planned_bytes."""
        self.planned_bytes = self.buffers.finish(self.forward_calls + self.backward_calls,
                                                 KernelCall, self.sub_batches.planned_bytes())
        return self


def _allocator(sub_batches, buffers):
    """allocate(desc): a buffer of the sub-batch being planned, else of the whole batch."""
    def allocate(desc):
        if sub_batches.active:
            return sub_batches.allocate(desc)
        return buffers.new(desc)
    return allocate


def _append_backward(calls, call):
    calls.append(call)
    # Gradients written in a layout other than the stored one are reordered right after.
    for memory in getattr(call, "args", {}).values():
        if isinstance(memory, DeferredReorder):
            memory.flush()
