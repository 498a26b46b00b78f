"""keras.ops eagerly on numpy arrays: every function against real Keras 3's keras.ops (JAX
backend) on the same inputs, values and dtypes; broadcasting shapes that do not fit named."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))  # the shared real-Keras helper

import keras_oracle  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from kiln import keras as kk  # noqa: E402

RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 3, 4)).astype(np.float32)
POSITIVE = (np.abs(A) + 0.1).astype(np.float32)
ROW = RNG.standard_normal((4,)).astype(np.float32)
COLUMN = RNG.standard_normal((3, 1)).astype(np.float32)
LEADING = RNG.standard_normal((2, 1, 1)).astype(np.float32)
INTS = np.array([[0, 2, 1], [1, 0, 2]], dtype=np.int32)
M1 = RNG.standard_normal((3, 4)).astype(np.float32)
M2 = RNG.standard_normal((4, 5)).astype(np.float32)
IMAGES = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
KERNEL = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)

# (function name, positional arguments, keyword arguments)
CASES = [
    *[(name, (A,), {}) for name in (
        "relu", "relu6", "sigmoid", "tanh", "exp", "abs", "square", "negative", "softplus",
        "softsign", "silu", "elu", "selu", "gelu", "leaky_relu", "hard_sigmoid", "hard_silu",
        "sign", "floor", "ceil", "round", "sin", "cos", "erf", "expm1")],
    *[(name, (POSITIVE,), {}) for name in ("sqrt", "log", "log1p", "rsqrt")],
    ("gelu", (A,), {"approximate": False}),
    ("elu", (A,), {"alpha": 0.5}),
    ("leaky_relu", (A,), {"negative_slope": 0.1}),
    ("clip", (A, -0.5, 0.7), {}),
    # broadcasting: scalar, trailing axes, middle axes, leading axes, both sides
    *[(name, (A, other), {}) for name in ("add", "subtract", "multiply", "divide", "maximum",
                                         "minimum")
      for other in (2.5, ROW, COLUMN, LEADING, A)],
    ("add", (COLUMN, ROW), {}),
    ("power", (POSITIVE, 1.5), {}),
    ("power", (POSITIVE, COLUMN), {}),
    *[(name, (A, COLUMN), {}) for name in ("equal", "not_equal", "greater", "greater_equal",
                                          "less", "less_equal")],
    ("where", (A > 0, A, ROW), {}),
    # reductions over any axes, keepdims
    *[(name, (A,), keywords) for name in ("sum", "mean", "max", "min", "var", "std", "prod")
      for keywords in ({"axis": (0, 2)}, {"axis": -1, "keepdims": True})],
    ("sum", (A,), {}),
    ("logsumexp", (A,), {"axis": 1, "keepdims": True}),
    ("argmax", (A,), {"axis": -1}),
    ("argmin", (A,), {"axis": 0}),
    # linear algebra
    ("matmul", (M1, M2), {}),
    ("matmul", (A, M2), {}),
    ("dot", (M1, M2), {}),
    ("einsum", ("ij,jk->ik", M1, M2), {}),
    ("tensordot", (M1, M2), {"axes": 1}),
    # shapes and values
    ("reshape", (A, (4, -1)), {}),
    ("transpose", (A,), {}),
    ("transpose", (A, (0, 2, 1)), {}),
    ("expand_dims", (A, 1), {}),
    ("squeeze", (LEADING,), {}),
    ("squeeze", (LEADING, 1), {}),
    ("concatenate", ([A, A],), {"axis": -1}),
    ("stack", ([A, A],), {"axis": 1}),
    ("split", (A, 2), {"axis": 2}),
    ("split", (A, [1, 3]), {"axis": -1}),
    ("slice", (A, (0, 1, 2), (2, 2, 1)), {}),
    ("cast", (A, "int32"), {}),
    ("ones_like", (A,), {}),
    ("zeros_like", (INTS,), {}),
    ("convert_to_tensor", (A,), {}),
    ("one_hot", (INTS, 3), {}),
    ("softmax", (A,), {}),
    ("softmax", (A,), {"axis": 1}),
    ("log_softmax", (A,), {}),
    # the ops of a transformer block: position codes, masks, gathers
    ("arange", (0, 7, 2), {}),
    ("arange", (5,), {}),
    ("arange", (0.5, 3.0), {"step": 0.5}),
    ("linspace", (0.0, 1.0, 5), {}),
    ("linspace", (0, 1, 4), {"endpoint": False}),
    ("triu", (A,), {}),
    ("triu", (M1, 1), {}),
    ("tril", (A, -1), {}),
    ("take", (A, INTS), {"axis": 2}),
    ("take", (A, [2, -1, 0]), {"axis": 1}),
    ("take", (A, 1), {"axis": 0}),
    ("tile", (A, (1, 2, 1)), {}),
    ("tile", (ROW, 3), {}),
    ("repeat", (A, 2), {"axis": 1}),
    ("repeat", (A, np.array([1, 0, 2])), {"axis": 1}),
    ("cumsum", (A,), {"axis": 1}),
    ("cumsum", (INTS,), {}),
    ("round", (A * 3,), {"decimals": 1}),
    # pooling
    # (Keras 3.15's JAX backend fails on strides=None: given explicitly)
    ("max_pool", (IMAGES, 2), {"strides": 2, "data_format": "channels_last"}),
    ("max_pool", (IMAGES, (2, 3)), {"strides": 1, "padding": "same",
                                    "data_format": "channels_last"}),
    ("average_pool", (IMAGES, 3), {"strides": 2, "padding": "same",
                                   "data_format": "channels_last"}),
    ("average_pool", (IMAGES, 2), {"strides": (2, 1), "data_format": "channels_first"}),
    # convolution
    ("conv", (IMAGES, KERNEL), {"data_format": "channels_last"}),
    ("conv", (IMAGES, KERNEL), {"strides": 2, "padding": "same",
                                "data_format": "channels_last"}),
    ("conv", (IMAGES, KERNEL), {"dilation_rate": (2, 1), "data_format": "channels_last"}),
]


def _ids(case):
    name, arguments, keywords = case
    shapes = ",".join(str(np.shape(a)) if not isinstance(a, (str, list)) else type(a).__name__
                      for a in arguments)
    return f"{name}[{shapes}]{keywords or ''}"


@pytest.fixture(scope="module")
def keras_ops():
    return keras_oracle.real_keras().ops


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_eager_result_equals_keras(case, keras_ops):
    name, arguments, keywords = case
    ours = getattr(kk.ops, name)(*arguments, **keywords)
    theirs = getattr(keras_ops, name)(*arguments, **keywords)
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs)
    else:
        ours, theirs = [ours], [theirs]
    for mine, real in zip(ours, theirs, strict=True):
        real = np.asarray(real)
        assert isinstance(mine, np.ndarray), f"{name} returned {type(mine).__name__}"
        assert mine.dtype == real.dtype, f"{name}: dtype {mine.dtype}, keras {real.dtype}"
        assert mine.shape == real.shape
        np.testing.assert_allclose(mine, real, rtol=2e-6, atol=2e-6, err_msg=name)


def test_keras_ops_is_reachable_as_in_keras():
    from kiln import keras

    assert keras.ops.nn.softmax is keras.ops.softmax
    np.testing.assert_array_equal(keras.ops.add(np.ones(3, np.float32), 1), np.full(3, 2.0))


def test_operators_on_weights_compute_eagerly():
    layer = kk.layers.Layer(name="holder")
    w = layer.add_weight(shape=(3,), initializer="ones", name="w")
    np.testing.assert_array_equal(w * 2.0 + 1.0, np.full(3, 3.0, np.float32))
    np.testing.assert_array_equal(1.0 - w, np.zeros(3, np.float32))
