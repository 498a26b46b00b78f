"""Shared test helper for ops of several inputs (merge ops): the multi-input counterpart of
op_checker's OpHarness / check_op, with the same numpy-reference and central-difference
checks."""

from dataclasses import dataclass, field

import numpy as np
from op_checker import _pick, parameter_specs, to_plain

from kiln.binding import constants as dnnl
from kiln.binding.memory import Memory, MemoryDesc
from kiln.ops.tensor import CHANNELS_LAST, Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore
from kiln.plan.step_plan import logical_dims, plain_desc

# -- ops of several inputs (arity None: merge ops) --------------------------------------------

@dataclass
class MultiResult:
    output: np.ndarray
    input_grads: list  # one np.ndarray (Keras layout) or None per input
    param_grads: dict = field(default_factory=dict)


class MultiInputHarness:
    """A plan of one op of several inputs, each input reaching it from plain Keras layout:

        x_i -> plain Memory -> branches[i] ops (e.g. a Conv2D) -> reorder to layouts[i]
            -> op.forward(builder, [Tensor, ...], need_input_grad) -> output (read back)
        dy -> plain Memory -> op backward -> branch backwards -> input grads (read back)

    Args:
        op: the op (arity None).
        xs: one array per input (Keras layout), fixing the shapes.
        params: {"<branch op name>/kernel": array, ...} for the branch ops' parameters.
        branches: {input index: [single-input ops]} applied to that input before `op`.
        layouts: {input index: oneDNN format tag} the input is reordered into before `op`.
        data_type: dnnl.f32, or dnnl.bf16 (inputs and dy reach the op as bf16; the builder
            has data_type bf16).
        need_input_grad: one bool per input, passed to `op` (None: all True).
    """

    def __init__(self, op, xs, params=None, data_format=CHANNELS_LAST, branches=None,
                 layouts=None, data_type=dnnl.f32, training=True, need_input_grad=None):
        self.op = op
        self.data_format = data_format
        self.training = training
        branches, layouts = dict(branches or {}), dict(layouts or {})
        params = {} if params is None else params
        xs = [np.asarray(x, dtype=np.float32) for x in xs]
        self.input_shapes = [x.shape for x in xs]
        self.input_dims = [logical_dims(x.shape, data_format) for x in xs]
        self.need = [True] * len(xs) if need_input_grad is None else list(need_input_grad)

        self.store = ParameterStore()
        self.param_shapes = {}
        for index, ops in branches.items():
            dims = self.input_dims[index]
            for branch_op in ops:
                for key, (param_dims, tag) in parameter_specs(branch_op, dims,
                                                               data_format).items():
                    name = f"{branch_op.name}/{key}"
                    value = np.asarray(params[name], dtype=np.float32)
                    self.param_shapes[name] = value.shape
                    self.store.add(name, param_dims, tag, value)
                dims = branch_op.output_dims(dims)

        builder = self.builder = PlanBuilder(self.store, training=training, data_type=data_type)
        self.input_memories = [Memory(plain_desc(d, data_format)) for d in self.input_dims]
        self.inputs = [m.as_array().reshape(s) for m, s in zip(self.input_memories,
                                                               self.input_shapes)]
        for array, x in zip(self.inputs, xs):
            array[...] = x
        tensors, branch_backwards = [], []
        for index, memory in enumerate(self.input_memories):
            tensor, backwards = Tensor(memory, data_format), []
            for branch_op in branches.get(index, ()):
                tensor, backward = branch_op.forward(builder, tensor, need_input_grad=True)
                backwards.append(backward)
            tag = layouts.get(index)
            if tag is not None or (data_type != dnnl.f32 and not backwards):
                desc = (MemoryDesc.with_tag(tensor.dims, data_type, tag) if tag is not None
                        else plain_desc(tensor.dims, data_format, data_type))
                tensor = tensor.with_memory(builder.reorder(tensor.memory, desc,
                                                            f"input {index} to layout"))
            tensors.append(tensor)
            branch_backwards.append(backwards)
        self.input_tensors = tensors
        output, backward = op.forward(builder, tensors, self.need)
        builder.keep(output.memory)  # read back by the test: bytes of its own
        self.output_tensor = output
        self.output_shape = tuple(output.keras_shape)

        self.input_grad_memories = [None] * len(xs)
        if training:
            self.dy_memory = Memory(plain_desc(output.dims, data_format))
            self.dy = self.dy_memory.as_array().reshape(self.output_shape)
            dy = builder.reorder(self.dy_memory, plain_desc(output.dims, data_format, data_type),
                                 "dy to data type", backward=True)
            grads = backward(dy)
            assert len(grads) == len(xs), f"{len(grads)} gradients for {len(xs)} inputs"
            for index, grad in enumerate(grads):
                if not self.need[index]:
                    assert grad is None, f"input {index} needs no gradient but got one"
                    continue
                for branch_backward in reversed(branch_backwards[index]):
                    grad = branch_backward(grad)
                self.input_grad_memories[index] = builder.keep(grad)
        builder.finish()
        self.store.pack()
        self.forward_calls = list(builder.forward_calls)
        self.backward_calls = list(builder.backward_calls)

    def forward(self, xs=None):
        if xs is not None:
            for array, x in zip(self.inputs, xs):
                array[...] = x
        for call in self.forward_calls:
            call.run()
        out = self.output_tensor
        return to_plain(out.memory, out.dims, out.data_format, self.output_shape)

    def backward(self, dy):
        self.dy[...] = np.asarray(dy, dtype=np.float32).reshape(self.output_shape)
        for call in self.backward_calls:
            call.run()
        grads = [None if memory is None else
                 to_plain(memory, dims, self.data_format, shape)
                 for memory, dims, shape in zip(self.input_grad_memories, self.input_dims,
                                                self.input_shapes)]
        params = {name: self.store.get_grad(name).reshape(shape)
                  for name, shape in self.param_shapes.items()}
        return grads, params

    def run(self, xs=None, dy=None):
        output = self.forward(xs)
        if dy is None:
            return MultiResult(output, [None] * len(self.inputs))
        grads, params = self.backward(dy)
        return MultiResult(output, grads, params)

    def set_param(self, name, value):
        self.store.set_value(name, np.asarray(value, dtype=np.float32))

    def objective(self, dy):
        return float(np.sum(self.forward().astype(np.float64) * dy))


def check_multi_input_op(op, xs, dy, reference, data_format=CHANNELS_LAST, params=None,
                         reference_grads=None, numeric=True, rtol=1e-5, atol=1e-6,
                         grad_rtol=1e-5, grad_atol=1e-5, entries=6, eps=1e-2, num_rtol=3e-2,
                         num_atol=3e-3, seed=0, **harness_options):
    """Run an op of several inputs and check it against numpy.

    reference(xs, params) -> output, in float64 (xs: list of Keras-layout arrays).
    reference_grads(xs, params, dy) -> list of input gradients (None where not needed).
    numeric: compare every input gradient (and branch parameter gradient) with central
        differences of L = sum(output * dy), skipping entries where the float64 reference's
        objective has a kink within +-eps.
    harness_options: branches, layouts, data_type, need_input_grad (MultiInputHarness).
    Returns (MultiResult, harness).
    """
    xs = [np.asarray(x, dtype=np.float32) for x in xs]
    params = {k: np.asarray(v, dtype=np.float32) for k, v in (params or {}).items()}
    dy = np.asarray(dy, dtype=np.float32)
    harness = MultiInputHarness(op, xs, params, data_format, **harness_options)
    result = harness.run(xs, dy)
    xs64 = [x.astype(np.float64) for x in xs]
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    expected = reference(xs64, p64)
    assert result.output.shape == expected.shape, (result.output.shape, expected.shape)
    np.testing.assert_allclose(result.output, expected, rtol=rtol, atol=atol,
                               err_msg="forward output differs from the numpy reference")
    for index, wanted in enumerate(harness.need):
        assert (result.input_grads[index] is not None) == wanted, f"input {index} gradient"
    if reference_grads is not None:
        for index, grad in enumerate(reference_grads(xs64, p64, dy.astype(np.float64))):
            if grad is not None and harness.need[index]:
                np.testing.assert_allclose(result.input_grads[index], grad, rtol=grad_rtol,
                                           atol=grad_atol, err_msg=f"gradient of input {index}")
    if numeric:
        _check_multi_numerical(harness, xs, params, dy, result, reference, entries, eps,
                               num_rtol, num_atol, seed)
    return result, harness


def _check_multi_numerical(harness, xs, params, dy, result, reference, entries, eps, rtol,
                           atol, seed):
    rng = np.random.default_rng(seed)
    dy64 = dy.astype(np.float64)

    def perturbed(target, index, delta):
        kind, key = target
        pxs, pp = [x.copy() for x in xs], dict(params)
        if kind == "input":
            pxs[key][index] += delta
        else:
            pp[key] = params[key].copy()
            pp[key][index] += delta
        return pxs, pp

    def ref_objective(pxs, pp):
        return float(np.sum(reference([x.astype(np.float64) for x in pxs],
                                      {k: v.astype(np.float64) for k, v in pp.items()}) * dy64))

    targets = [(("input", i), xs[i].shape, grad)
               for i, grad in enumerate(result.input_grads) if grad is not None]
    targets += [(("param", name), params[name].shape, grad)
                for name, grad in result.param_grads.items()]
    failures, picked, checked = [], 0, 0
    for target, shape, analytic in targets:
        for index in _pick(rng, shape, entries):
            picked += 1
            slopes = [(ref_objective(*perturbed(target, index, step))
                       - ref_objective(*perturbed(target, index, -step))) / (2 * step)
                      for step in (eps, eps / 100)]
            if abs(slopes[0] - slopes[1]) > 1e-3 * max(1.0, abs(slopes[1])):
                continue  # a kink of the reference within +-eps
            values = []
            for delta in (eps, -eps):
                pxs, pp = perturbed(target, index, delta)
                for array, x in zip(harness.inputs, pxs):
                    array[...] = x
                if target[0] == "param":
                    harness.set_param(target[1], pp[target[1]])
                values.append(harness.objective(dy64))
            for array, x in zip(harness.inputs, xs):
                array[...] = x
            if target[0] == "param":
                harness.set_param(target[1], params[target[1]])
            numeric = (values[0] - values[1]) / (2 * eps)
            checked += 1
            value = float(analytic[index])
            if abs(numeric - value) > atol + rtol * abs(numeric):
                failures.append(f"{target[0]} {target[1]} {tuple(int(i) for i in index)}: "
                                f"analytic {value:.6g} numeric {numeric:.6g}")
    assert not failures, "gradient does not match central differences:\n" + "\n".join(failures)
    assert checked >= picked / 2, f"only {checked} of {picked} entries were smooth"
    return checked


__all__ = ["MultiInputHarness", "MultiResult", "check_multi_input_op"]
