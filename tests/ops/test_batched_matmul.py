"""BatchedMatmulOp against float64 numpy and central differences: a tensor times a (K, N)
weight at ranks 2 to 4 (a 4D image in both data formats), and two tensors (B plain or read
transposed) at ranks 3 and 4."""

import numpy as np
import pytest
from multi_input_checker import check_multi_input_op
from op_checker import CHANNELS_FIRST, CHANNELS_LAST, check_op

from kiln.ops.batched_matmul import BatchedMatmulOp


@pytest.mark.parametrize("shape, data_format", [
    ((3, 5), CHANNELS_LAST), ((2, 4, 5), CHANNELS_LAST), ((2, 3, 4, 5), CHANNELS_LAST),
    ((2, 3, 4, 5), CHANNELS_FIRST)])
def test_tensor_times_weight(shape, data_format):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((5, 6))
    dy = rng.standard_normal((*shape[:-1], 6))
    op = BatchedMatmulOp("proj", data_format, weight=("w", (5, 6)))

    def reference(x, params):
        return x @ params["proj/w"]

    def reference_grads(x, params, dy):
        dw = x.reshape(-1, 5).T @ dy.reshape(-1, 6)
        return dy @ params["proj/w"].T, {"proj/w": dw}

    check_op(op, x, {"proj/w": w}, dy, reference, data_format,
             reference_grads=reference_grads)


@pytest.mark.parametrize("shape, kernel, contract", [
    ((2, 4, 5), (5, 2, 3), 1),      # EinsumDense "abc,cde->abde" (MHA's projections)
    ((2, 4, 2, 3), (2, 3, 5), 2),   # "abcd,cde->abe" (MHA's output projection)
    ((3, 6), (6, 2, 2), 1),         # "ab,bcd->acd"
    ((2, 3, 4), (3, 4, 2, 2), 2)])  # two contracted axes, two output axes
def test_tensor_times_kernel_over_several_axes(shape, kernel, contract):
    """The kernel's row-major bytes are read as one (K, N) matrix: no reshape, no copy."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal(shape), rng.standard_normal(kernel)
    free, units = shape[:-contract], kernel[contract:]
    k, n = int(np.prod(kernel[:contract])), int(np.prod(units))
    dy = rng.standard_normal((*free, *units))
    op = BatchedMatmulOp("proj", weight=("kernel", kernel), contract=contract)
    assert op.parameter_dims(None) == {"kernel": ((k, n), op.parameter_dims(None)["kernel"][1])}

    def reference(x, params):
        return np.tensordot(x, params["proj/kernel"].reshape(kernel), axes=contract)

    def reference_grads(x, params, dy):
        w = params["proj/kernel"].reshape(k, n)
        dw = x.reshape(-1, k).T @ dy.reshape(-1, n)
        return (dy.reshape(-1, n) @ w.T).reshape(shape), {"proj/kernel": dw.reshape(kernel)}

    check_op(op, x, {"proj/kernel": w}, dy, reference, reference_grads=reference_grads)


@pytest.mark.parametrize("shape, kernel, contract", [
    ((2, 4, 5), (5, 2, 3), 1),      # MHA's projections with their (heads, key_dim) bias
    ((2, 4, 2, 3), (2, 3, 5), 2),   # MHA's output projection with its (dim,) bias
    ((3, 6), (6, 4), 1)])
def test_tensor_times_kernel_plus_bias(shape, kernel, contract):
    """The bias is the matmul's own argument (one value per output unit, Keras's shape of the
    kernel's output axes); its gradient sums the output gradient over the free axes."""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(shape), rng.standard_normal(kernel)
    units = kernel[contract:]
    b = rng.standard_normal(units)
    dy = rng.standard_normal((*shape[:-contract], *units))
    op = BatchedMatmulOp("proj", weight=("kernel", kernel), contract=contract, bias="bias")
    assert op.parameter_dims(None)["bias"][0] == units

    def reference(x, params):
        return np.tensordot(x, params["proj/kernel"].reshape(kernel), axes=contract) \
            + params["proj/bias"].reshape(units)

    def reference_grads(x, params, dy):
        k, n = int(np.prod(kernel[:contract])), int(np.prod(units))
        w = params["proj/kernel"].reshape(k, n)
        dw = x.reshape(-1, k).T @ dy.reshape(-1, n)
        return (dy.reshape(-1, n) @ w.T).reshape(shape), {
            "proj/kernel": dw.reshape(kernel),
            "proj/bias": dy.reshape(-1, n).sum(axis=0).reshape(units)}

    check_op(op, x, {"proj/kernel": w, "proj/bias": b}, dy, reference,
             reference_grads=reference_grads)


@pytest.mark.parametrize("a_shape, b_shape, transpose_b", [
    ((2, 3, 4), (2, 4, 5), False),     # bij,bjk->bik
    ((2, 3, 4), (2, 5, 4), True),      # bqd,bkd->bqk
    ((2, 3, 4, 5), (2, 3, 5, 2), False),  # bhqk,bhkd->bhqd
    ((2, 3, 4, 5), (2, 3, 2, 5), True)])  # bhqd,bhkd->bhqk
def test_two_tensors(a_shape, b_shape, transpose_b):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)

    def product(a, b):
        return a @ (np.swapaxes(b, -1, -2) if transpose_b else b)

    dy = rng.standard_normal(product(a, b).shape)

    def reference_grads(xs, params, dy):
        a, b = xs
        b_read = np.swapaxes(b, -1, -2) if transpose_b else b
        db = np.swapaxes(a, -1, -2) @ dy
        return [dy @ np.swapaxes(b_read, -1, -2),
                np.swapaxes(db, -1, -2) if transpose_b else db]

    op = BatchedMatmulOp("attention", transpose_b=transpose_b)
    check_multi_input_op(op, [a, b], dy, lambda xs, params: product(*xs),
                         reference_grads=reference_grads, rtol=1e-4, atol=1e-5,
                         grad_rtol=1e-4, grad_atol=1e-4)


@pytest.mark.parametrize("equation, a_shape, b_shape, transpose_b, permutes", [
    # multi-head attention's scores: "abcd,aecd->acbe" (query, key)
    ("abcd,aecd->acbe", (2, 4, 3, 5), (2, 6, 3, 5), True, ((0, 2, 1, 3), (0, 2, 1, 3), None)),
    # its weighted values: "acbe,aecd->abcd" (scores, value), the result written permuted
    ("acbe,aecd->abcd", (2, 3, 4, 6), (2, 6, 3, 5), False, (None, (0, 2, 1, 3), (0, 2, 1, 3))),
    # rank 3, every operand and the result permuted: "bkm,bkn->bnm"
    ("bkm,bkn->bnm", (2, 5, 3), (2, 5, 4), True, ((0, 2, 1), (0, 2, 1), (0, 2, 1)))])
@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_two_tensors_read_and_written_with_permuted_axes(equation, a_shape, b_shape,
                                                         transpose_b, permutes, scale):
    """The copies into plain buffers transpose (strided views), the backward transposes
    the gradients back: no separate reorder ops; `scale` is a post-op of all three matmuls."""
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    dy = rng.standard_normal(np.einsum(equation, a, b).shape)
    terms, output = equation.split("->")
    s1, s2 = terms.split(",")

    def reference_grads(xs, params, dy):
        a, b = xs
        return [scale * np.einsum(f"{output},{s2}->{s1}", dy, b),
                scale * np.einsum(f"{s1},{output}->{s2}", a, dy)]

    op = BatchedMatmulOp("heads", transpose_b=transpose_b, permutes=permutes, scale=scale)
    check_multi_input_op(op, [a, b], dy, lambda xs, params: scale * np.einsum(equation, *xs),
                         reference_grads=reference_grads, rtol=1e-4, atol=1e-5,
                         grad_rtol=1e-4, grad_atol=1e-4)


def test_shapes_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="BatchedMatmul 'attention'.*do not fit"):
        BatchedMatmulOp("attention").output_dims([(1, 3, 4), (1, 5, 4)])
    with pytest.raises(ValueError, match=r"contracted axes \(5,\)"):
        BatchedMatmulOp("proj", weight=("w", (5, 6))).output_dims((1, 4))
    with pytest.raises(ValueError, match=r"contracted axes \(2, 3\)"):
        BatchedMatmulOp("proj", weight=("w", (2, 3, 4)), contract=2).output_dims((1, 3, 2))
    with pytest.raises(ValueError, match="scale apply to two inputs only"):
        BatchedMatmulOp("proj", weight=("w", (5, 6)), scale=0.5)
    with pytest.raises(ValueError, match="permutes must be three permutations"):
        BatchedMatmulOp("heads", permutes=((1, 0, 2), None, None))
    with pytest.raises(ValueError, match="bias applies with a weight only"):
        BatchedMatmulOp("heads", bias="bias")
    with pytest.raises(ValueError, match="contract=3 must leave"):
        BatchedMatmulOp("proj", weight=("w", (2, 3, 4)), contract=3)
