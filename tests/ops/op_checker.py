"""Shared test helper: run kiln ops on numpy data and check them against numpy references.

`OpHarness` plans one op (or a short chain of ops) with a training `PlanBuilder` the way a
`StepPlan` does, but with the user-facing edges in plain Keras layout:

    x (Keras layout) -> plain input Memory -> op.forward ... -> output (read back to Keras layout)
    dy (Keras layout) -> plain Memory -> backward ... -> input grad (read back), store.get_grad

`check_op` runs a harness and compares (a) the output (and optionally the gradients) with a
float64 numpy reference and (b) the gradients with central differences of the scalar
L = sum(output * dy) computed with kiln's own float32 forward.

The module also holds the float64 numpy references of the ops (Keras semantics), shared by
the op tests and the step-plan test.
"""

import inspect
from dataclasses import dataclass, field

import numpy as np

from kiln.binding import constants as dnnl
from kiln.binding.library import lib
from kiln.binding.memory import Memory
from kiln.binding.reorder import reorder_now
from kiln.ops.tensor import CHANNELS_FIRST, CHANNELS_LAST, Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore
from kiln.plan.step_plan import logical_dims, plain_desc

__all__ = ["OpHarness", "OpResult", "run_ops", "check_op", "check_numerical_gradients",
           "parameter_specs", "CHANNELS_FIRST", "CHANNELS_LAST"]



def native_channel_block():
    """The blocked layout oneDNN's convolutions choose on this CPU (nChw16c with AVX-512,
    nChw8c below it): oneDNN 3.2's jit binary kernels take that block, and only their
    reference kernel the other one."""
    isa = lib.dnnl_get_effective_cpu_isa()
    avx512 = isa & dnnl.cpu_isa_avx512_core == dnnl.cpu_isa_avx512_core
    return dnnl.aBcd16b if avx512 else dnnl.aBcd8b

def parameter_specs(op, input_dims, data_format):
    """op.parameter_dims(...) -> {name: (dims, tag)}; Dense also takes the data format."""
    if "data_format" in inspect.signature(op.parameter_dims).parameters:
        return op.parameter_dims(input_dims, data_format)
    return op.parameter_dims(input_dims)


def to_plain(memory, dims, data_format, shape):
    """A copy of `memory` (any layout) in the plain Keras layout, as a numpy array."""
    plain = Memory(plain_desc(dims, data_format))
    reorder_now(memory, plain)
    return plain.as_array().copy().reshape(shape)


def as_input(x):
    """An op's input as the plan holds it: int32 for integers (token ids), else float32."""
    x = np.asarray(x)
    return x.astype(np.int32 if np.issubdtype(x.dtype, np.integer) else np.float32)


@dataclass
class OpResult:
    output: np.ndarray
    input_grad: object  # np.ndarray, or None when the first op was asked for no input grad
    param_grads: dict = field(default_factory=dict)


class OpHarness:
    """A training (or inference) plan of `ops` over an input of x's shape.

    Args:
        ops: an op or a list of ops, applied in order.
        x: an input (Keras layout) fixing the shape; its values are copied in.
        params: {"<op name>/kernel": Keras-layout array, ...} for every parameter of the ops.
        data_format: channels_last or channels_first (how x and the output are laid out).
        training: build with PlanBuilder(training=...); backward is only planned in training.
        need_input_grad: passed to the first op (later ops always get True).
        frozen: names of parameters added with trainable=False (the plan computes no
            gradient for them).
    """

    def __init__(self, ops, x, params=None, data_format=CHANNELS_LAST, training=True,
                 need_input_grad=True, frozen=()):
        self.ops = list(ops) if isinstance(ops, (list, tuple)) else [ops]
        self.data_format = data_format
        self.training = training
        params = {} if params is None else params
        x = as_input(x)
        self.input_shape = x.shape
        self.input_dims = logical_dims(x.shape, data_format)

        self.store = ParameterStore()
        self.param_shapes = {}
        self.state_shapes = {}
        dims = self.input_dims
        for op in self.ops:
            for key, (param_dims, tag) in parameter_specs(op, dims, data_format).items():
                name = f"{op.name}/{key}"
                if name not in params:
                    raise KeyError(f"missing parameter {name!r}")
                value = np.asarray(params[name], dtype=np.float32)
                self.param_shapes[name] = value.shape
                self.store.add(name, param_dims, tag, value, trainable=name not in frozen)
            state_dims = getattr(op, "state_dims", lambda dims: {})(dims)
            for key, (param_dims, tag) in state_dims.items():
                # non-trainable state (e.g. moving statistics): given like parameters, no grad
                name = f"{op.name}/{key}"
                if name not in params:
                    raise KeyError(f"missing state {name!r}")
                value = np.asarray(params[name], dtype=np.float32)
                self.state_shapes[name] = value.shape
                self.store.add(name, param_dims, tag, value, trainable=False)
            dims = op.output_dims(dims)
        unknown = set(params) - set(self.param_shapes) - set(self.state_shapes)
        if unknown:
            raise KeyError(f"unused parameters {sorted(unknown)}")

        self.builder = PlanBuilder(self.store, training=training)
        input_type = dnnl.s32 if x.dtype == np.int32 else dnnl.f32  # token ids stay ints
        self.input_memory = Memory(plain_desc(self.input_dims, data_format, input_type))
        self.inputs = self.input_memory.as_array().reshape(self.input_shape)
        self.inputs[...] = x

        tensor = Tensor(self.input_memory, data_format)
        backwards = []
        for index, op in enumerate(self.ops):
            tensor, backward = op.forward(self.builder, tensor,
                                          need_input_grad=need_input_grad if index == 0 else True)
            backwards.append(backward)
        self.output_tensor = tensor
        self.builder.keep(tensor.memory)  # read back by the test: bytes of its own
        self.output_shape = tuple(tensor.keras_shape)
        self.forward_call_count = len(self.builder.forward_calls)

        self.input_grad_memory = None
        self.dy_memory = None
        if training:
            self.dy_memory = Memory(plain_desc(tensor.dims, tensor.data_format))
            self.dy = self.dy_memory.as_array().reshape(self.output_shape)
            grad = self.dy_memory
            for backward in reversed(backwards):
                grad = backward(grad)
                if grad is None:
                    break
            self.input_grad_memory = grad
            if grad is not None:
                self.builder.keep(grad)
        self.builder.finish()
        self.store.pack()
        # Forward-only calls that ops add while planning their backward (e.g. a weight reorder
        # for backward-data) land in the forward list after the op's own calls: run them all.
        self.forward_calls = list(self.builder.forward_calls)
        self.backward_calls = list(self.builder.backward_calls)

    # -- running ---------------------------------------------------------------------------
    def forward(self, x=None):
        """Run the forward list; returns the output in Keras layout."""
        if x is not None:
            self.inputs[...] = x
        for call in self.forward_calls:
            call.run()
        return self.read_output()

    def read_output(self):
        return to_plain(self.output_tensor.memory, self.output_tensor.dims,
                        self.output_tensor.data_format, self.output_shape)

    def backward(self, dy):
        """Run the backward list with upstream gradient dy (Keras layout)."""
        assert self.training, "backward needs a training harness"
        self.dy[...] = np.asarray(dy, dtype=np.float32).reshape(self.output_shape)
        for call in self.backward_calls:
            call.run()
        input_grad = None
        if self.input_grad_memory is not None:
            input_grad = to_plain(self.input_grad_memory, self.input_dims, self.data_format,
                                  self.input_shape)
        grads = {name: self.store.get_grad(name).reshape(shape)
                 for name, shape in self.param_shapes.items()}
        return input_grad, grads

    def run(self, x=None, dy=None):
        output = self.forward(x)
        if dy is None:
            return OpResult(output, None, {})
        input_grad, grads = self.backward(dy)
        return OpResult(output, input_grad, grads)

    def set_param(self, name, value):
        self.store.set_value(name, np.asarray(value, dtype=np.float32))

    def get_param(self, name):
        shape = self.param_shapes.get(name) or self.state_shapes[name]
        return self.store.get_value(name).reshape(shape)

    def objective(self, dy):
        """L = sum(output * dy) in float64, from a fresh forward run."""
        return float(np.sum(self.forward().astype(np.float64) * dy))


def run_ops(ops, x, params, dy, data_format=CHANNELS_LAST, need_input_grad=True):
    """Plan, run forward + backward once, return an OpResult (and the harness)."""
    harness = OpHarness(ops, x, params, data_format, training=True,
                        need_input_grad=need_input_grad)
    return harness.run(x, dy), harness


def _pick(rng, shape, count):
    size = int(np.prod(shape))
    chosen = rng.choice(size, size=min(count, size), replace=False)
    return [np.unravel_index(i, shape) for i in chosen]


def check_numerical_gradients(harness, x, params, dy, result, reference=None, entries=12,
                              eps=1e-2, rtol=3e-2, atol=3e-3, seed=0, min_checked=0.5):
    """Compare result's gradients with central differences of L = sum(kiln_output * dy).

    x, params, dy: the values the harness ran with (restored afterwards).
    reference: optional float64 forward f(x, params) -> output; entries where its own
        objective is not smooth over [-eps, eps] (a relu kink or a max-pool switch inside the
        step) are skipped, and at least `min_checked` of the picked entries must remain.
    Returns the number of entries checked.
    """
    rng = np.random.default_rng(seed)
    dy64 = np.asarray(dy, dtype=np.float64)
    x = np.asarray(x, dtype=np.float32)
    params = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}

    def ref_objective(xr, pr):
        return float(np.sum(reference(xr.astype(np.float64),
                                      {k: v.astype(np.float64) for k, v in pr.items()}) * dy64))

    def smooth(perturbed):
        """The reference objective's slope over +-eps equals its slope over +-eps/100."""
        if reference is None:
            return True
        slopes = [(ref_objective(*perturbed(step)) - ref_objective(*perturbed(-step)))
                  / (2 * step) for step in (eps, eps / 100)]
        return abs(slopes[0] - slopes[1]) <= 1e-3 * max(1.0, abs(slopes[1]))

    targets = []
    if result.input_grad is not None:
        targets.append((None, x.shape, result.input_grad))
    for name, grad in result.param_grads.items():
        targets.append((name, params[name].shape, grad))
    picked = checked = 0
    failures = []
    for name, shape, analytic in targets:
        for index in _pick(rng, shape, entries):
            picked += 1

            def perturbed(delta):
                if name is None:
                    xp = x.copy()
                    xp[index] += delta
                    return xp, params
                pp = dict(params)
                pp[name] = params[name].copy()
                pp[name][index] += delta
                return x, pp

            if not smooth(perturbed):
                continue
            values = []
            for delta in (eps, -eps):
                xp, pp = perturbed(delta)
                if name is None:
                    harness.inputs[...] = xp
                else:
                    harness.set_param(name, pp[name])
                values.append(harness.objective(dy64))
            if name is None:
                harness.inputs[...] = x
            else:
                harness.set_param(name, params[name])
            numeric = (values[0] - values[1]) / (2 * eps)
            value = float(analytic[index])
            checked += 1
            if abs(numeric - value) > atol + rtol * abs(numeric):
                failures.append(f"{name or 'input'}{tuple(int(i) for i in index)}: "
                                f"analytic {value:.6g} numeric {numeric:.6g}")
    assert not failures, "gradient does not match central differences:\n" + "\n".join(failures)
    assert checked >= min_checked * picked, f"only {checked} of {picked} entries were smooth"
    return checked


def check_op(ops, x, params, dy, reference, data_format=CHANNELS_LAST, reference_grads=None,
             need_input_grad=True, numeric=True, rtol=1e-4, atol=1e-5, grad_rtol=1e-4,
             grad_atol=1e-4, **numeric_options):
    """Run `ops` and check them against numpy.

    reference(x, params) -> output (float64 numpy, Keras layout).
    reference_grads(x, params, dy) -> (input grad or None, {param name: grad}) in float64,
        compared with kiln's gradients when given.
    numeric: also check the gradients with central differences (check_numerical_gradients).
    Returns (OpResult, harness).
    """
    x = as_input(x)
    params = {k: np.asarray(v, dtype=np.float32) for k, v in params.items()}
    dy = np.asarray(dy, dtype=np.float32)
    result, harness = run_ops(ops, x, params, dy, data_format, need_input_grad)
    x64 = x.astype(np.float64)
    p64 = {k: v.astype(np.float64) for k, v in params.items()}
    expected = reference(x64, p64)
    assert result.output.shape == expected.shape, (result.output.shape, expected.shape)
    np.testing.assert_allclose(result.output, expected, rtol=rtol, atol=atol,
                               err_msg="forward output differs from the numpy reference")
    if not need_input_grad:
        assert result.input_grad is None
    if reference_grads is not None:
        expected_dx, expected_grads = reference_grads(x64, p64, dy.astype(np.float64))
        if need_input_grad and expected_dx is not None:
            np.testing.assert_allclose(result.input_grad, expected_dx, rtol=grad_rtol,
                                       atol=grad_atol, err_msg="input gradient")
        for name, grad in expected_grads.items():
            np.testing.assert_allclose(result.param_grads[name], grad, rtol=grad_rtol,
                                       atol=grad_atol, err_msg=f"gradient of {name}")
    if numeric:
        check_numerical_gradients(harness, x, params, dy, result, reference=reference,
                                  **numeric_options)
    return result, harness


# -- float64 numpy references (Keras semantics) ---------------------------------------------

def activation_forward(name, z):
    if name in (None, "linear"):
        return z
    if name == "relu":
        return np.maximum(z, 0.0)
    if name == "tanh":
        return np.tanh(z)
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-z))
    if name == "softmax":
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    raise ValueError(name)


def activation_backward(name, y, dy):
    """d(loss)/dz from the activation output y = f(z) and dy = d(loss)/dy."""
    if name in (None, "linear"):
        return dy
    if name == "relu":
        return dy * (y > 0)
    if name == "tanh":
        return dy * (1.0 - y * y)
    if name == "sigmoid":
        return dy * y * (1.0 - y)
    if name == "softmax":
        return y * (dy - np.sum(dy * y, axis=-1, keepdims=True))
    raise ValueError(name)


def same_padding(length, kernel, stride):
    out = -(-length // stride)
    total = max((out - 1) * stride + kernel - length, 0)
    return total // 2, total - total // 2


def _paddings(h, w, kernel, strides, padding):
    if padding == "valid":
        return (0, 0), (0, 0)
    return same_padding(h, kernel[0], strides[0]), same_padding(w, kernel[1], strides[1])


def to_nhwc(x, data_format):
    return x if data_format == CHANNELS_LAST or x.ndim != 4 else x.transpose(0, 2, 3, 1)


def from_nhwc(x, data_format):
    return x if data_format == CHANNELS_LAST or x.ndim != 4 else x.transpose(0, 3, 1, 2)


def _windows(xp, kernel, strides):
    """(N, OH, OW, C, kh, kw) patches of an NHWC array."""
    windows = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=(1, 2))
    return windows[:, ::strides[0], ::strides[1]]


def conv2d_reference(x, kernel, bias=None, strides=(1, 1), padding="valid", activation=None,
                     data_format=CHANNELS_LAST, dy=None):
    """Keras Conv2D. Returns y, or (y, dx, dkernel, dbias) when dy is given."""
    x = to_nhwc(x, data_format)
    n, h, w, c = x.shape
    kh, kw = kernel.shape[:2]
    (pt, pb), (pl, pr) = _paddings(h, w, (kh, kw), strides, padding)
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    windows = _windows(xp, (kh, kw), strides)
    z = np.einsum("nijcab,abco->nijo", windows, kernel)
    if bias is not None:
        z = z + bias
    y = activation_forward(activation, z)
    if dy is None:
        return from_nhwc(y, data_format)
    dz = activation_backward(activation, y, to_nhwc(dy, data_format))
    dkernel = np.einsum("nijcab,nijo->abco", windows, dz)
    dbias = dz.sum(axis=(0, 1, 2))
    dxp = np.zeros_like(xp)
    oh, ow = dz.shape[1:3]
    for a in range(kh):
        for b in range(kw):
            dxp[:, a:a + strides[0] * (oh - 1) + 1:strides[0],
                b:b + strides[1] * (ow - 1) + 1:strides[1], :] += np.einsum(
                    "nijo,co->nijc", dz, kernel[a, b])
    dx = dxp[:, pt:pt + h, pl:pl + w, :]
    return from_nhwc(y, data_format), from_nhwc(dx, data_format), dkernel, dbias


def pool2d_reference(x, mode, pool_size, strides, padding="valid", data_format=CHANNELS_LAST,
                     dy=None):
    """Keras MaxPooling2D / AveragePooling2D ('same' average excludes the padding).

    Returns y, or (y, dx) when dy is given; max routes each window's gradient to the first
    maximum of the window (inputs in tests have no ties)."""
    x = to_nhwc(x, data_format)
    n, h, w, c = x.shape
    (pt, pb), (pl, pr) = _paddings(h, w, pool_size, strides, padding)
    fill = -np.inf if mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    valid = np.pad(np.ones((1, h, w, 1)), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    windows = _windows(xp, pool_size, strides)
    counts = _windows(valid, pool_size, strides).sum(axis=(4, 5))
    if mode == "max":
        y = windows.max(axis=(4, 5))
    else:
        y = windows.sum(axis=(4, 5)) / counts
    if dy is None:
        return from_nhwc(y, data_format)
    dy = to_nhwc(dy, data_format)
    dxp = np.zeros_like(xp)
    oh, ow = y.shape[1:3]
    kh, kw = pool_size
    for i in range(oh):
        for j in range(ow):
            r, s = i * strides[0], j * strides[1]
            if mode == "max":
                flat = windows[:, i, j].reshape(n, c, kh * kw).argmax(axis=-1)
                a, b = np.unravel_index(flat, (kh, kw))
                nn, cc = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
                np.add.at(dxp, (nn, r + a, s + b, cc), dy[:, i, j])
            else:
                dxp[:, r:r + kh, s:s + kw, :] += (dy[:, i, j] / counts[:, i, j])[:, None, None]
    dx = dxp[:, pt:pt + h, pl:pl + w, :] * (valid[:, pt:pt + h, pl:pl + w] > 0)
    return from_nhwc(y, data_format), from_nhwc(dx, data_format)


def dense_reference(x, kernel, bias=None, activation=None, dy=None):
    """Keras Dense on x.reshape(N, -1) (i.e. after Flatten of the Keras-layout array).

    Returns y, or (y, dx, dkernel, dbias) when dy is given (dx has x's shape)."""
    flat = x.reshape(x.shape[0], -1)
    z = flat @ kernel
    if bias is not None:
        z = z + bias
    y = activation_forward(activation, z)
    if dy is None:
        return y
    dz = activation_backward(activation, y, dy)
    return y, (dz @ kernel.T).reshape(x.shape), flat.T @ dz, dz.sum(axis=0)


def softmax_cross_entropy_reference(logits, labels, epsilon=1e-7):
    """Keras 2 categorical_crossentropy on softmax probabilities.

    Returns (probabilities, mean loss, mean accuracy)."""
    p = activation_forward("softmax", logits)
    clipped = np.clip(p / p.sum(axis=-1, keepdims=True), epsilon, 1.0 - epsilon)
    loss = -np.sum(labels * np.log(clipped), axis=-1)
    accuracy = np.mean(p.argmax(axis=-1) == labels.argmax(axis=-1))
    return p, float(loss.mean()), float(accuracy)
