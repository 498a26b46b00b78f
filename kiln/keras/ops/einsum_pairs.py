"""einsum of two tensors inside a model, in any axis order: one batched matmul reading and
writing permuted axes.

Multi-head attention writes its products with the heads axis in the middle:
`einsum("aecd,abcd->acbe", key, query)` (scores) and `einsum("acbe,aecd->abcd", scores,
value)` (the weighted values). Such an equation names batch axes (in both operands and the
output), one contracted axis (in both operands, not the output) and one free axis per operand.
It is planned as one BatchedMatmulOp with `permutes`: A read as (batch..., free,
contracted), B as (batch..., contracted, free) or (batch..., free, contracted) (read
transposed), whichever its order already is closer to, the product written in the output's
order. The copies into plain buffers the op makes anyway are then transposing copies; the
result costs one more only when the output's order is not the product's. The operands are
swapped when that saves it (A·B = (Bᵀ·Aᵀ)ᵀ: the output's free axis order decides which operand
is A).
"""

from ...graph.symbolic import apply
from ...ops.batched_matmul import BatchedMatmulOp
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


def pair_einsum(s1, s2, output, x1, x2, scale=1.0):
    """The planned product of `einsum(f"{s1},{s2}->{output}", x1, x2)` (times `scale`, a
    post-op of the matmul), or None when the equation is not a pair product (axis_roles)."""
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
    for x in (x1, x2):
        keras_axes_to_logical(x)  # refuses tensors flattened from 4D, by name
    transpose_b = s2 != batch + k + n
    read_b = batch + (n + k if transpose_b else k + n)
    permutes = ([s1.index(c) for c in batch + m + k], [s2.index(c) for c in read_b],
                [(batch + m + n).index(c) for c in output])
    op = BatchedMatmulOp(op_name("einsum"), x1.data_format, transpose_b=transpose_b,
                         permutes=permutes, scale=scale)
    try:
        op.output_dims([x1.dims, x2.dims])
    except ValueError as error:
        raise ValueError(f"{where()}: keras.ops.einsum: {error}") from None
    return apply(op, [x1, x2])
