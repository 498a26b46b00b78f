"""Element-wise merge ops: the engine behind Keras' Add, Subtract, Multiply, Average, Maximum
and Minimum layers (Concatenate is in concatenate.py).

Inputs must have the same shape; they may come in different layouts (a blocked conv output
beside a plain model input). Each op computes in the first input's layout and data type: the
other inputs are reordered into it, so every primitive below sees one descriptor and oneDNN's
jit kernels apply. Forward is one oneDNN call where oneDNN has one (`sum` for n-ary sums and
averages, `binary` otherwise, chained in place for more than two inputs).

Backward of a sum is the identity: AddOp hands the output gradient itself to every input (and
marks it shared, so no consumer overwrites it). SubtractOp, AverageOp and MultiplyOp are eltwise
linear / binary mul calls. MaximumOp and MinimumOp route the gradient to the winning input with
a numba kernel, since oneDNN has no primitive for that mask; ties split the gradient the way
JAX differentiates Keras' chain of `maximum(maximum(x0, x1), x2)`: half to each side of every
tied step.
"""


import numpy as np

from ..binding import constants as dnnl
from ..binding.descriptor import descriptor, sum_descriptor
from ..binding.memory import Memory, MemoryDesc
from .base import Op
from .eltwise import ACTIVATIONS, IDENTITY, eltwise_backward, post_ops
from .layout_preference import prefer
from .numba_config import PARALLEL, THREADS, get_thread_id, njit, prange
from .tensor import Tensor

ITEMSIZE = {dnnl.f32: 4, dnnl.bf16: 2}
ALGORITHM_NAMES = {dnnl.binary_add: "add", dnnl.binary_sub: "sub", dnnl.binary_mul: "mul",
                   dnnl.binary_max: "max", dnnl.binary_min: "min"}


# -- checks shared with Concatenate ----------------------------------------------------------

def check_count(op, count):
    """At least two inputs (exactly two for SubtractOp)."""
    low, high = op.min_inputs, op.max_inputs
    if count < low or (high is not None and count > high):
        wanted = f"exactly {low}" if low == high else f"at least {low}"
        raise ValueError(f"{op.layer} '{op.name}': takes {wanted} inputs, got {count}")


def check_dims(op, dims, axis=None, shapes=None):
    """Raise ValueError unless all `dims` (logical, one per input) are equal except on `axis`;
    the message lists `shapes` (Keras shapes when known, else the logical dims)."""
    check_count(op, len(dims))
    shapes = dims if shapes is None else shapes
    first = dims[0]
    for d in dims[1:]:
        same = len(d) == len(first) and all(
            a == b or i == axis or (i == 0 and None in (a, b))
            for i, (a, b) in enumerate(zip(d, first, strict=False)))
        if not same:
            where = "" if axis is None else " except on the concatenation axis"
            listing = ", ".join(f"input {i} {tuple(shape)}" for i, shape in enumerate(shapes))
            raise ValueError(f"{op.layer} '{op.name}': inputs must have the same shape{where}, "
                             f"got {listing}")


def check_tensors(op, tensors, axis=None):
    """Shapes, data formats and flattening of forward's input Tensors."""
    check_count(op, len(tensors))
    # the format says how a 4D buffer is laid out; (batch, features) and sequences have one
    formats = {t.data_format for t in tensors if len(t.dims) == 4}
    if len(formats) > 1:
        listing = ", ".join(f"input {i} {t.data_format}" for i, t in enumerate(tensors))
        raise ValueError(f"{op.layer} '{op.name}': inputs must have the same data format, "
                         f"got {listing}")
    if len({t.flattened for t in tensors}) > 1:
        # A flattened tensor is still 4D in memory, in whatever layout it had: there is no
        # element-wise correspondence with a 2D tensor of the same Keras shape.
        flat = [i for i, t in enumerate(tensors) if t.flattened]
        raise ValueError(f"{op.layer} '{op.name}': cannot merge flattened 4D tensors (inputs "
                         f"{flat}) with 2D tensors")
    check_dims(op, [t.dims for t in tensors], axis, [t.keras_shape for t in tensors])


def needed(need_input_grad, count):
    """need_input_grad as one bool per input (None or a single bool: the same for all)."""
    if need_input_grad is None or isinstance(need_input_grad, bool):
        return [need_input_grad is not False] * count
    need = [bool(n) for n in need_input_grad]
    if len(need) != count:
        raise ValueError(f"need_input_grad has {len(need)} entries for {count} inputs")
    return need


# -- primitives ------------------------------------------------------------------------------

def add_call(builder, make, args, label, backward=False, keeps_zeros=True):
    """Bind `make(desc)` (a primitive for layout desc) to `args` (Memories all in one layout)
    and add it to the forward (or backward) list.

    oneDNN 3.2 has only its reference kernel, far slower (docs/performance.md, 'Decisions and
    their measurements'), for some element-wise primitives in some layouts on some CPUs
    (binary in nChw16c without AVX-512, sums over a padded block). Over buffers of one layout
    the work is element-wise, so it then runs on flat views of the same bytes, when the
    primitive keeps a blocked layout's zero padding zero (`keeps_zeros`: 0 op 0 = 0,
    relu(0) = 0, but sigmoid(0) = 0.5).
    """
    desc = next(iter(args.values())).desc
    padded = desc.size != np.prod(desc.dims) * ITEMSIZE[desc.data_type]
    flat = MemoryDesc.with_tag((desc.size // ITEMSIZE[desc.data_type],), desc.data_type,
                               dnnl.a)
    if keeps_zeros or not padded:
        primitive = prefer(lambda: make(desc), lambda: make(flat))
    else:
        primitive = make(desc)
    if primitive.pd.md(dnnl.query_dst_md) == flat:
        args = {arg: Memory(flat, memory.storage) for arg, memory in args.items()}
    call = builder.bind(primitive, args, label)
    (builder.add_backward if backward else builder.add_forward)(call)


def add_binary(builder, alg, src0, src1, dst, label, activation=None, who="", backward=False):
    """dst = src0 (alg) src1 with an optional fused activation, all in dst's layout (see
    add_call); `who` names the op in errors (bf16 where oneDNN lacks it: no AVX-512)."""
    def make(desc):
        return builder.primitive(*descriptor(
            "dnnl_binary_primitive_desc_create", "binary", f"{who} {ALGORITHM_NAMES[alg]} {desc}",
            alg, desc, desc, desc, post_ops=post_ops(activation)))
    add_call(builder, make, {dnnl.ARG_SRC: src0, dnnl.ARG_SRC_1: src1, dnnl.ARG_DST: dst},
             label, backward, keeps_zeros=activation in (None, "relu", "tanh"))


def add_sum(builder, sources, dst, label, scale=1.0, who=""):
    """dst = scale * (sources[0] + sources[1] + ...), all in dst's layout, in one pass."""
    count = len(sources)

    def make(desc):
        return builder.primitive(*sum_descriptor(desc, [desc] * count, [scale] * count))
    args = {dnnl.ARG_MULTIPLE_SRC + i: s for i, s in enumerate(sources)}
    args[dnnl.ARG_DST] = dst
    add_call(builder, make, args, label)


def linear(builder, source, alpha, label):
    """A new buffer alpha * source, in source's layout (eltwise linear, added to backward)."""
    desc = source.desc
    primitive = builder.primitive(*descriptor(
        "dnnl_eltwise_forward_primitive_desc_create", "eltwise forward",
        f"{label}: linear {alpha} {desc}", dnnl.forward_inference, dnnl.eltwise_linear, desc,
        desc, alpha, 0.0))
    target = builder.allocate(desc)
    builder.add_backward(builder.bind(primitive, {dnnl.ARG_SRC: source, dnnl.ARG_DST: target},
                                      label))
    return target


def hand_out(builder, grad, need):
    """The same gradient buffer for every input that needs one (shared if more than one)."""
    if sum(need) > 1:
        builder.share(grad)
    return [grad if n else None for n in need]


# -- the ops ---------------------------------------------------------------------------------

class _ElementwiseMergeOp(Op):
    """Shape rule and input preparation of the element-wise merges; subclasses plan `_plan`."""

    arity = None
    per_image = False  # several inputs: the sub-batch front is a chain of one-input ops
    layer = "Merge"
    min_inputs, max_inputs = 2, None
    activation = None

    def __init__(self, name):
        self.name = name

    @property
    def label(self):
        return f"{self.layer} '{self.name}'"

    def output_dims(self, input_dims):
        check_dims(self, [tuple(d) for d in input_dims])
        return tuple(input_dims[0])

    def forward(self, builder, x, need_input_grad=None):
        """x: the input Tensors; need_input_grad: one bool per input (None: all True)."""
        tensors = list(x)
        check_tensors(self, tensors)
        need = needed(need_input_grad, len(tensors))
        desc = tensors[0].memory.desc
        sources = [builder.reorder(t.memory, desc, f"{self.name} input {i} to layout")
                   for i, t in enumerate(tensors)]
        # No merge reads its output in backward (Add's activation derivative aside).
        result = Tensor(builder.allocate(desc), tensors[0].data_format, tensors[0].flattened,
                        activation=self.activation, backward_reads_memory=False)
        return result, self._plan(builder, sources, result, need)

    def _chain(self, builder, alg, sources, output, activation=None):
        """output = ((s0 alg s1) alg s2) ...: the first call writes output, the rest work in
        place on it (the activation fused into the last call only)."""
        for i in range(1, len(sources)):
            last = i == len(sources) - 1
            add_binary(builder, alg, sources[0] if i == 1 else output, sources[i], output,
                       f"{self.name} forward" + (f" {i}" if i > 1 else ""),
                       activation if last else None, self.label)


class AddOp(_ElementwiseMergeOp):
    """Args: name, activation (None, 'linear', or one of eltwise.ACTIVATIONS: fused, as for
    ResNet's add + relu)."""

    layer = "Add"

    def __init__(self, name, activation=None):
        super().__init__(name)
        if activation not in IDENTITY and activation not in ACTIVATIONS:
            raise ValueError(f"Add '{name}': argument activation must be None, 'linear' or "
                             f"one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.activation = None if activation in IDENTITY else activation

    def replace(self, **changes):
        """A new AddOp with `changes` to the arguments (a fused activation)."""
        return AddOp(**{"name": self.name, "activation": self.activation, **changes})

    def _plan(self, builder, sources, result, need):
        output = result.memory
        if len(sources) == 2 or self.activation is not None:
            # binary add takes the activation as a post-op; sum cannot
            self._chain(builder, dnnl.binary_add, sources, output, self.activation)
        else:
            add_sum(builder, sources, output, f"{self.name} forward", who=self.label)

        def backward(output_grad):
            if not any(need):
                return [None] * len(need)
            grad = output_grad
            # a max pooling downstream may have applied the derivative to its smaller gradient
            if self.activation is not None and not result.activation_grad_applied_downstream:
                # in place only where the plan lets it (eltwise_backward asks writable)
                grad = eltwise_backward(builder, self.activation, output, output_grad,
                                        self.name)
            return hand_out(builder, grad, need)

        return backward


class SubtractOp(_ElementwiseMergeOp):
    """x0 - x1; gradients g and -g."""

    layer = "Subtract"
    min_inputs = max_inputs = 2

    def _plan(self, builder, sources, result, need):
        output = result.memory
        self._chain(builder, dnnl.binary_sub, sources, output)

        def backward(output_grad):
            # -g first: a consumer of g planned later may overwrite g in place
            negated = (linear(builder, output_grad, -1.0, f"{self.label} backward negate")
                       if need[1] else None)
            return [output_grad if need[0] else None, negated]

        return backward


class AverageOp(_ElementwiseMergeOp):
    """(x0 + ... + xn-1) / n as one scaled oneDNN sum; every input's gradient is g / n."""

    layer = "Average"

    def _plan(self, builder, sources, result, need):
        output = result.memory
        count = len(sources)
        add_sum(builder, sources, output, f"{self.name} forward", 1.0 / count, self.label)

        def backward(output_grad):
            if not any(need):
                return [None] * count
            grad = linear(builder, output_grad, 1.0 / count, f"{self.label} backward")
            return hand_out(builder, grad, need)

        return backward


class MultiplyOp(_ElementwiseMergeOp):
    """x0 * x1 * ...; input i's gradient is g times the product of the other inputs."""

    layer = "Multiply"

    def _plan(self, builder, sources, result, need):
        output = result.memory
        self._chain(builder, dnnl.binary_mul, sources, output)
        desc = output.desc

        def backward(output_grad):
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            grads = []
            for i, wanted in enumerate(need):
                if not wanted:
                    grads.append(None)
                    continue
                others = [s for j, s in enumerate(sources) if j != i]
                target = builder.allocate(desc)
                for k, other in enumerate(others):  # in place after the first
                    add_binary(builder, dnnl.binary_mul, grad if k == 0 else target, other,
                               target, f"{self.name} backward {i}", who=self.label,
                               backward=True)
                grads.append(target)
            return grads

        return backward


class _ExtremeOp(_ElementwiseMergeOp):
    sign = 1.0
    algorithm = dnnl.binary_max

    def _plan(self, builder, sources, result, need):
        output = result.memory
        self._chain(builder, self.algorithm, sources, output)
        desc = output.desc
        bf16 = desc.data_type == dnnl.bf16  # else f32: the plan's two activation types
        dtype = np.uint16 if bf16 else np.float32

        def backward(output_grad):
            if not any(need):
                return [None] * len(need)
            grad = builder.reorder(output_grad, desc, f"{self.name} gradient", backward=True)
            grads = [builder.allocate(desc) if n else None for n in need]
            empty = np.zeros(0, dtype)  # stands for the gradients nobody needs
            # The kernel captures these arrays now: their bytes must never move (the plan's
            # buffer sharing looks for captured arrays among the arguments, not in tuples).
            for memory in [grad, *sources, *(g for g in grads if g is not None)]:
                builder.keep(memory)
            scratch = np.zeros((THREADS, len(sources) + 3, CHUNK), np.float32)
            builder.add_backward(builder.kernel(
                extreme_backward_kernel,
                (grad.as_array(dtype), tuple(s.as_array(dtype) for s in sources),
                 tuple(g.as_array(dtype) if g is not None else empty for g in grads),
                 bf16, np.float32(self.sign), scratch), f"{self.name} backward"))
            return grads

        return backward


class MaximumOp(_ExtremeOp):
    """Element-wise maximum; the gradient goes to the largest input (split on ties)."""

    layer = "Maximum"


class MinimumOp(_ExtremeOp):
    """Element-wise minimum; the gradient goes to the smallest input (split on ties)."""

    layer = "Minimum"
    sign = -1.0
    algorithm = dnnl.binary_min


# -- the Maximum / Minimum gradient kernel -----------------------------------------------------

# Elements per thread and pass: a chunk's rows stay in L1/L2 between the passes.
CHUNK = 2048
U = np.uint64  # unsigned indices: numba's negative-index wrap turns loads into gathers
F = np.float32


@njit(**PARALLEL)
def extreme_backward_kernel(grad, inputs, grads, bf16, sign, values):
    """grads[k] = grad * the share of the gradient input k gets (sign 1: MaximumOp, -1: MinimumOp).

    inputs, grads: tuples of flat arrays in one layout (a zero-size grads[k] is not wanted),
    float32, or the uint16 bits of bf16 when `bf16` (widened through the scratch rows, rounded
    back to nearest even). values: per-thread scratch rows (len(inputs) + 3, CHUNK).

    Differentiating Keras' out = max(max(x0, x1), x2) ... with JAX's rule (a tied max passes
    half to each side) gives the tied inputs of an element, in order, 2**(1 - ties) for the
    first and the second, then twice the previous share for each later one: ties of 3 get
    1/4, 1/4, 1/2. Every pass is branch-free (random ties would defeat branch prediction).
    """
    size = grad.size
    n = len(inputs)
    if n == 2 and not bf16:  # the common case, one pass without scratch
        first, second = inputs[0], inputs[1]
        for i in prange(size):
            a, b = sign * first[U(i)], sign * second[U(i)]
            share = F(a > b) + F(0.5) * F(a == b)
            if grads[0].size:
                grads[0][U(i)] = grad[U(i)] * share
            if grads[1].size:
                grads[1][U(i)] = grad[U(i)] * (F(1.0) - share)
        return
    for chunk in prange((size + CHUNK - 1) // CHUNK):
        first = chunk * CHUNK
        count = min(CHUNK, size - first)
        rows = values[get_thread_id()]
        best, scale, seen = rows[n], rows[n + 1], rows[n + 2]
        for k in range(n):  # sign * input k
            source, row = inputs[k], rows[k]
            if bf16:
                bits = row.view(np.uint32)
                for e in range(count):
                    bits[U(e)] = np.uint32(source[U(first + e)]) << np.uint32(16)
                for e in range(count):
                    row[U(e)] *= sign
            else:
                for e in range(count):
                    row[U(e)] = sign * source[U(first + e)]
        for e in range(count):
            best[U(e)] = rows[0, U(e)]
            scale[U(e)] = 2.0
            seen[U(e)] = 0.0
        for k in range(1, n):
            row = rows[k]
            for e in range(count):
                best[U(e)] = max(best[U(e)], row[U(e)])
        for k in range(n):  # scale = 2**(1 - ties)
            row = rows[k]
            for e in range(count):
                scale[U(e)] *= F(1.0) - F(0.5) * F(row[U(e)] == best[U(e)])
        for k in range(n):  # row k = the share of input k
            row = rows[k]
            for e in range(count):
                hit = F(row[U(e)] == best[U(e)])
                row[U(e)] = scale[U(e)] * hit
                scale[U(e)] *= F(1.0) + hit * F(seen[U(e)] > 0)
                seen[U(e)] += hit
        for k in range(n):
            target, row = grads[k], rows[k]
            if target.size == 0:
                continue
            if bf16:
                for e in range(count):
                    g = np.uint32(np.uint32(grad[U(first + e)]) << np.uint32(16)).view(F)
                    b = F(g * row[U(e)]).view(np.uint32)
                    b += np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))
                    target[U(first + e)] = b >> np.uint32(16)
            else:
                for e in range(count):
                    target[U(first + e)] = grad[U(first + e)] * row[U(e)]
