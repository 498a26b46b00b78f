"""How a plan under construction gets its oneDNN calls: primitives from the process cache,
bound to their arguments and the plan's shared scratchpad, and reorders between layouts.

(What a primitive's cache key holds, and which layout an op prefers, is the ops' and the
binding's business: this module only asks the cache with the key it is given.)
"""

from ..binding import constants as dnnl
from ..binding.descriptor import reorder_descriptor
from ..binding.memory import layout_key
from ..binding.primitive import BoundCall, primitive_cache


class Primitives:
    """Cached primitives, bound with a scratchpad from `buffers` (a buffers.Buffers)."""

    def __init__(self, buffers):
        self._buffers = buffers

    def get(self, key, make_pd):
        """A ready-to-run primitive from the process cache; `make_pd()` builds it on a miss."""
        return primitive_cache.get(key, make_pd)

    def bind(self, primitive, args, label):
        """A BoundCall with the plan's shared scratchpad attached."""
        args = dict(args)
        if primitive.scratchpad_desc is not None:
            args[dnnl.ARG_SCRATCHPAD] = self._buffers.scratchpad(primitive.scratchpad_desc)
        return BoundCall(primitive, args, label)

    def reorder_call(self, source, target, label):
        """A bound reorder from `source` into `target` (two Memory objects)."""
        primitive = self.get(*reorder_descriptor(source.desc, target.desc))
        return self.bind(primitive, {dnnl.ARG_FROM: source, dnnl.ARG_TO: target}, label)


class Reorders:
    """Tensors in the layouts their readers want: a reorder call into a new buffer when a
    tensor is in another, shared by the readers of one inference forward.

    Args:
        primitives: the plan's Primitives.
        allocate, add_forward, add_backward: the builder's (a reorder's target is a buffer
            like any other; its call joins the forward or backward list).
        labels: the list every reorder's label is appended to (tests and the profiler read
            which tensors were reordered).
        training: whether the plan trains (only inference plans share reorders).
        sub_batches: the plan's SubBatchBuffers (nothing is shared inside a sub-batch).
    """

    def __init__(self, primitives, allocate, add_forward, add_backward, labels, training,
                 sub_batches):
        self._primitives = primitives
        self._allocate, self._add_forward, self._add_backward = (allocate, add_forward,
                                                                 add_backward)
        self._labels = labels
        self._training = training
        self._sub_batches = sub_batches
        self._shared = {}  # (id(source), layout) -> (source, target), inference forward only

    def reorder(self, source, desc, label, backward=False):
        """`source` in layout `desc`: itself when it already is, else a new buffer filled by
        a reorder call added to the forward (or backward) list."""
        if source.desc == desc:
            return source
        # Two readers that want the same tensor in the same layout (a residual block's input:
        # the next conv and the add fused into a later conv) share one reorder in inference
        # plans, where a tensor is only written again after an overwrite() call.
        memo = None
        if not self._training and not backward and not self._sub_batches.active:
            memo = (id(source), layout_key(desc))
            if memo in self._shared:
                return self._shared[memo][1]
        target = self._allocate(desc)
        if memo is not None:
            self._shared[memo] = (source, target)  # the source stays alive: ids stay unique
        call = self._primitives.reorder_call(source, target, label)
        (self._add_backward if backward else self._add_forward)(call)
        self._labels.append(label)
        return target

    def overwrite(self, memory):
        """Forget the shared reorders from or into `memory`: a call is about to write over
        it in place."""
        self._shared = {key: (source, target) for key, (source, target)
                        in self._shared.items()
                        if source is not memory and target is not memory}
        return memory
