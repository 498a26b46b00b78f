"""keras.ops.matmul / dot / einsum / tensordot: eager with numpy.

Inside a model two families are planned onto oneDNN:
- a tensor times a (K, N) weight from add_weight, contracting the tensor's last axis
  (`matmul(x, self.w)`, `x @ self.w`, `dot`, `tensordot(x, self.w, axes=1)`,
  `einsum("...i,ij->...j")` with any named axes): a (batch, features) tensor is the engine's
  DenseOp (an inner product, which also reads a flattened image without a copy), any other
  rank BatchedMatmulOp's weight form. The weight is the op's parameter, so it trains.
- a product of two activations, batched over equal leading axes (attention-style):
  `matmul(a, b)` of ranks >= 3, `einsum("bij,bjk->bik")`, `"bqd,bkd->bqk"` (b read
  transposed), and the same with more batch axes ("bhqd,bhkd->bhqk"): BatchedMatmulOp;
  in other axis orders (multi-head attention's "aecd,abcd->acbe") with reorders around it
  (einsum_pairs.py).
- `einsum` of a tensor and a weight contracting several trailing axes, EinsumDense's
  "abc,cde->abde" and "abcd,cde->abe": BatchedMatmulOp's weight form, the weight's bytes read
  as one (K, N) matrix.
Other products are refused by name.
"""

import numpy as np

from ...graph.symbolic import SymbolicTensor, apply
from ...ops.batched_matmul import BatchedMatmulOp
from ...ops.dense import DenseOp
from ..layers.custom_weights import bind_dims
from ..layers.weight import Weight
from .core import eager_operand, is_symbolic, keras_array, not_in_model, op_name, result, where
from .einsum_pairs import pair_einsum

PLANNED = ("a tensor times a (K, N) weight from add_weight over the tensor's last axis, or "
           "two tensors (..., M, K) x (..., K, N) with equal leading axes, B possibly "
           "transposed")


def _times_weight(function, x, weight, contract=1):
    """x (..., K) times weight (K, N): DenseOp for 2D x, else BatchedMatmulOp's weight form
    (which also contracts several axes: x (..., C, D) times weight (C, D, ...))."""
    two_dims = function != "einsum"  # matmul / dot of a 3D weight are batched, not this
    if (len(weight.shape) != 2 if two_dims else len(weight.shape) <= contract) \
            or len(x.shape) <= contract:
        not_in_model(function, f"of shapes {x.shape} and {weight.shape}; planned: {PLANNED}")
    if tuple(x.shape[-contract:]) != tuple(weight.shape[:contract]):
        raise ValueError(f"{where()}: keras.ops.{function}: shapes {x.shape} and "
                         f"{weight.shape} do not fit ({x.shape[-contract:]} != "
                         f"{weight.shape[:contract]})")
    owner, short = weight.path.rsplit("/", 1)
    if len(x.shape) == 2 and len(weight.shape) == 2:
        op = DenseOp(owner, weight.shape[1], None, use_bias=False, kernel_name=short)
    else:
        op = BatchedMatmulOp(owner, x.data_format, weight=(short, weight.shape),
                             contract=contract)
    dims, tag = op.parameter_dims(x.dims)[short]
    bind_dims(weight, dims, tag, where())
    return apply(op, x)


def _times_tensor(function, a, b, transpose_b=False):
    """(..., M, K) x (..., K, N) (or (..., N, K) read transposed), batched."""
    if len(a.shape) < 3 or len(a.shape) != len(b.shape) or a.data_format != b.data_format:
        not_in_model(function, f"of shapes {a.shape} and {b.shape}; planned: {PLANNED}")
    op = BatchedMatmulOp(op_name(function), a.data_format, transpose_b=transpose_b)
    try:
        op.output_dims([a.dims, b.dims])
    except ValueError as error:
        raise ValueError(f"{where()}: keras.ops.{function}: {error}") from None
    return apply(op, [a, b])


def _symbolic_product(function, x1, x2):
    if isinstance(x1, SymbolicTensor) and isinstance(x2, Weight):
        return _times_weight(function, x1, x2)
    if function == "matmul" and isinstance(x1, SymbolicTensor) \
            and isinstance(x2, SymbolicTensor):
        return _times_tensor(function, x1, x2)
    not_in_model(function, f"planned: {PLANNED}")


def matmul(x1, x2):
    if is_symbolic(x1, x2):
        return _symbolic_product("matmul", x1, x2)
    return result(np.matmul(keras_array(x1), keras_array(x2)))


def dot(x1, x2):
    if is_symbolic(x1, x2):
        return _symbolic_product("dot", x1, x2)
    return result(np.dot(eager_operand(x1), eager_operand(x2)))


def tensordot(x1, x2, axes=2):
    if is_symbolic(x1, x2):
        if isinstance(x1, SymbolicTensor) and isinstance(x2, Weight):
            last = len(x1.shape) - 1
            if axes == 1 or _axis_pairs(axes) in ([(last, 0)], [(-1, 0)]):
                return _times_weight("tensordot", x1, x2)
        not_in_model("tensordot", f"axes={axes!r}; planned: axes=1 (the tensor's last axis "
                                  "against a (K, N) weight's first)")
    return result(np.tensordot(keras_array(x1), keras_array(x2), axes))


def _axis_pairs(axes):
    try:
        first, second = axes
        first = list(first) if isinstance(first, (list, tuple)) else [first]
        second = list(second) if isinstance(second, (list, tuple)) else [second]
        return list(zip(first, second, strict=True))
    except (TypeError, ValueError):
        return None


def einsum(subscripts, *operands):
    if is_symbolic(*operands):
        return _symbolic_einsum(subscripts, operands)
    return result(np.einsum(subscripts, *[keras_array(o) for o in operands]))


def _symbolic_einsum(subscripts, operands):
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if arrow and len(terms) == 2 and len(operands) == 2:
        (s1, s2), (x1, x2) = terms, operands
        if isinstance(x1, SymbolicTensor) and isinstance(x2, Weight):
            if _is_weight_pattern(s1, s2, output, len(x1.shape)):
                return _times_weight("einsum", x1, x2)
            contract = contracted_weight_axes(s1, s2, output, len(x1.shape), len(x2.shape))
            if contract:
                return _times_weight("einsum", x1, x2, contract)
        if isinstance(x1, SymbolicTensor) and isinstance(x2, SymbolicTensor):
            transpose_b = _pair_pattern(s1, s2, output)
            if transpose_b is not None and len(s1) == len(x1.shape) == len(x2.shape):
                return _times_tensor("einsum", x1, x2, transpose_b)
            product = pair_einsum(s1, s2, output, x1, x2)
            if product is not None:
                return product
    not_in_model("einsum", f"subscripts {subscripts!r}; planned: \"...i,ij->...j\" and "
                           "\"abc,cde->abde\" / \"abcd,cde->abe\" with a weight from "
                           "add_weight, and two tensors batched over shared axes with one "
                           "contracted axis (\"bij,bjk->bik\", \"aecd,abcd->acbe\")")


def contracted_weight_axes(s1, s2, output, rank, weight_rank):
    """How many trailing axes of the tensor "<free><contracted>,<contracted><units>->
    <free><units>" contracts with the weight's leading ones (0: not this form)."""
    if not (s1 + s2 + output).isalpha() or len(s1) != rank or len(s2) != weight_rank:
        return 0
    contract = len([c for c in s1 if c in s2])
    free, units = s1[:rank - contract], s2[contract:]
    letters = s1 + units
    if (contract < 1 or not units or s1[rank - contract:] != s2[:contract] or not free
            or output != free + units or len(set(letters)) != len(letters)):
        return 0
    return contract


def _is_weight_pattern(s1, s2, output, rank):
    """"<axes>i,ij-><axes>j" (the axes named, one per tensor axis, or "...")."""
    if len(s2) != 2 or not s1 or s2[0] != s1[-1] or output != s1[:-1] + s2[1]:
        return False
    prefix = s1[:-1]
    if prefix == "...":
        return s2[0] != s2[1] and "." not in s2
    letters = prefix + s2
    return len(s1) == rank and letters.isalpha() and len(set(letters)) == len(letters)


def _pair_pattern(s1, s2, output):
    """False for "<batch>mk,<batch>kn-><batch>mn", True for "<batch>mk,<batch>nk-><batch>mn",
    None otherwise."""
    if len(s1) < 3 or len(s1) != len(s2) or len(output) != len(s1) or not s1.isalpha():
        return None
    batch, m, k = s1[:-2], s1[-2], s1[-1]
    if s2[:-2] != batch or output[:-2] != batch or output[-2] != m:
        return None
    n = output[-1]
    letters = batch + m + k + n
    if len(set(letters)) != len(letters):
        return None
    if s2[-2:] == k + n:
        return False
    if s2[-2:] == n + k:
        return True
    return None
