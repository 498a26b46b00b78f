"""One-off reorders, outside any plan: loading user weights, reading optimizer state."""

from . import constants as dnnl
from .descriptor import reorder_descriptor
from .memory import Memory
from .primitive import BoundCall, primitive_cache


def reorder_now(source, target):
    """Copy `source` into `target` (two Memory objects) right away, converting the layout.

    For one-off edges such as loading user weights; plans use `PlanBuilder.reorder` instead.
    """
    primitive = primitive_cache.get(*reorder_descriptor(source.desc, target.desc))
    args = {dnnl.ARG_FROM: source, dnnl.ARG_TO: target}
    if primitive.scratchpad_desc is not None:
        args[dnnl.ARG_SCRATCHPAD] = Memory(primitive.scratchpad_desc)
    BoundCall(primitive, args, "one-off reorder").run()
