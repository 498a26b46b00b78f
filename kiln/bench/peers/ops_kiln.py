"""kiln: `BroadcastBinaryOp(add)` of a (1, C, 1, 1) parameter planned like any op of a step plan
(PlanBuilder, ParameterStore): the forward list (one oneDNN binary call) or the backward list
(the bias gradient's sum over N, H, W; the input gradient is the output gradient buffer)."""

from . import ops_shapes

AVAILABLE = None


def unsupported(model, data_format, mode, precision):
    return ops_shapes.check(model, mode, precision)


def plan(data_format):
    """(builder, forward calls, backward calls, input gradient is dy) for the case."""
    from ...binding import constants as dnnl
    from ...binding.memory import Memory, MemoryDesc
    from ...ops.broadcast import BroadcastBinaryOp
    from ...ops.tensor import CHANNELS_LAST, Tensor
    from ...plan.builder import PlanBuilder
    from ...plan.parameters import ParameterStore

    n, c, h, w = ops_shapes.N, ops_shapes.C, ops_shapes.H, ops_shapes.W
    tag = dnnl.acdb if data_format == CHANNELS_LAST else dnnl.abcd
    x, bias, dy = ops_shapes.data(data_format)
    store = ParameterStore()
    store.add("bias/bias", (1, c, 1, 1), tag, bias)
    builder = PlanBuilder(store, training=True)
    source = Memory(MemoryDesc.with_tag((n, c, h, w), dnnl.f32, tag))
    source.as_array()[:] = x.reshape(-1)
    op = BroadcastBinaryOp("bias", "add", ("bias", (1, c, 1, 1), tag))
    output, backward = op.forward(builder, Tensor(source, data_format), need_input_grad=True)
    builder.keep(output.memory)
    forward_calls = list(builder.forward_calls)
    grad = Memory(output.memory.desc)
    grad.as_array()[:] = dy.reshape(-1)
    input_grad = backward(grad)
    builder.keep(input_grad)
    builder.finish()
    store.pack()
    return builder, forward_calls, list(builder.backward_calls), input_grad is grad


def prepare(model, data_format, mode, precision):
    _, forward_calls, backward_calls, _ = plan(data_format)
    calls = forward_calls if mode == "forward" else backward_calls

    def step():
        for call in calls:
            call.run()

    return step


def describe(data_format):
    """What kiln plans for the case, call by call (for the report)."""
    _, forward_calls, backward_calls, passed_through = plan(data_format)

    def name(call):
        kind = getattr(getattr(call, "primitive", None), "pd", None)
        what = kind.implementation if kind is not None else call.function.__name__
        return f"{call.label} ({what})"

    return {"forward": [name(c) for c in forward_calls],
            "backward": [name(c) for c in backward_calls],
            "input_gradient": "the output gradient buffer itself, not copied" if passed_through
            else "a new buffer"}

