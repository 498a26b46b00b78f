"""The op contract: what every op offers the graph and the plan.

An op is a shape rule plus a forward and a backward planned onto oneDNN primitives (numba
kernels where oneDNN has none), side by side in one module:

    arity                     1 for ops of one input; None for ops of any number (merge ops)
    output_dims(dims)         logical output dims (N, C, H, W) or (N, F); for arity None
                              `dims` is a list, one entry per input
    parameter_dims(dims)      {short name: (logical dims, tag of the Keras layout)} of the
                              trainable weights; the plan names them "<op name>/<short name>"
    parameter_names(dims)     the full names of those weights (an op fused from two layers'
                              ops reads weights of both)
    state_dims(dims)          the same for non-trainable state the step updates
                              (BatchNormalization's moving statistics)
    per_image                 True when the plan may run the op in sub-batches of the batch
                              (plan/sub_batches.py reads only this): the op takes one input,
                              treats each image alone, and has been checked to plan and train
                              the same in sub-batches. An op that treats images alone but was
                              never planned so says False (ChannelAffine, BroadcastBinary).
    forward(builder, x, need_input_grad)
                              plans the forward calls and returns (output Tensor, backward);
                              for arity None, `x` is a list of Tensors and `need_input_grad`
                              a list of bools
    backward(output_grad)     plans the backward calls: output_grad is a Memory in any layout;
                              returns the input gradient Memory (None when not needed); for
                              arity None, a list with one Memory or None per input

An op may write its input-gradient result into `output_grad` in place only when
`builder.writable(output_grad)` says so: the plan hands one gradient buffer to several
consumers at a fan-out. It asks `builder.wants_grad(name)` before computing a weight gradient:
frozen weights (trainable=False) get none.
"""


class Op:
    """Defaults for the optional parts of the contract."""

    arity = 1
    per_image = False
    name = "op"

    def parameter_dims(self, input_dims):
        return {}

    def parameter_names(self, input_dims):
        return [f"{self.name}/{short}" for short in self.parameter_dims(input_dims)]

    def state_dims(self, input_dims):
        return {}
