"""einsum of two tensors inside a model, in any axis order: a batched matmul between reorders.

Multi-head attention writes its products with the heads axis in the middle:
`einsum("aecd,abcd->acbe", key, query)` (scores) and `einsum("acbe,aecd->abcd", scores,
value)` (the weighted values). Such an equation names batch axes (in both operands and the
output), one contracted axis (in both operands, not the output) and one free axis per operand.
It is planned as: each operand reordered (PermuteOp) to (batch..., free, contracted), unless it
already is, or its B to (batch..., contracted, free); one BatchedMatmulOp; the result reordered
to the output's order, unless it already is. The operands are swapped when that saves the last
reorder (A·B = (Bᵀ·Aᵀ)ᵀ: the output's free axis order decides which operand is A). Every
reorder is one oneDNN primitive with its reverse as backward, allocated once in the plan.
"""

from ...graph.symbolic import apply
from ...ops.batched_matmul import BatchedMatmulOp
from ...ops.permute import PermuteOp
from .core import keras_axes_to_logical, op_name, where


def axis_roles(s1, s2, output):
    """(batch letters in output order, contracted letter, free letter of s1, of s2), or None
    when the equation is not such a pair product."""
    terms = (s1, s2, output)
    if not all(t.isalpha() and len(set(t)) == len(t) for t in terms):
        return None
    batch = [c for c in output if c in s1 and c in s2]
    contracted = [c for c in s1 if c in s2 and c not in output]
    free1 = [c for c in s1 if c not in s2]
    free2 = [c for c in s2 if c not in s1]
    if (len(contracted) != 1 or len(free1) != 1 or len(free2) != 1 or not batch
            or set(output) != set(batch) | {free1[0], free2[0]}):
        return None
    if not (s1[0] == s2[0] == output[0]):  # the batch axis stays first everywhere
        return None
    return batch, contracted[0], free1[0], free2[0]


def _permuted(x, letters, target):
    """`x` (axes named `letters`) reordered to `target`: a PermuteOp, or x itself."""
    if letters == target:
        return x
    keras_axes_to_logical(x)  # refuses tensors flattened from 4D, by name
    axes = [letters.index(c) for c in target]
    return apply(PermuteOp(op_name("einsum_transpose"), axes[1:], x.data_format), x)


def pair_einsum(s1, s2, output, x1, x2):
    """The planned product of `einsum(f"{s1},{s2}->{output}", x1, x2)`, or None when the
    equation is not a pair product (see axis_roles)."""
    roles = axis_roles(s1, s2, output)
    if roles is None or len(s1) != len(x1.shape) or len(s2) != len(x2.shape):
        return None
    if x1.data_format != x2.data_format or not 3 <= len(output) <= 4:
        return None
    batch, k, m, n = roles
    batch = "".join(batch)
    # A's free axis is the output's second to last when the output ends in the free axes
    if output.endswith(n + m):
        (s1, x1, m), (s2, x2, n) = (s2, x2, n), (s1, x1, m)
    a = _permuted(x1, s1, batch + m + k)
    transpose_b = s2 != batch + k + n
    b = _permuted(x2, s2, batch + (n + k if transpose_b else k + n))
    op = BatchedMatmulOp(op_name("einsum"), a.data_format, transpose_b=transpose_b)
    try:
        op.output_dims([a.dims, b.dims])
    except ValueError as error:
        raise ValueError(f"{where()}: keras.ops.einsum: {error}") from None
    return _permuted(apply(op, [a, b]), batch + m + n, output)
