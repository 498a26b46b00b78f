"""EmbeddingOp against numpy: the gather of table rows by token id (int32 ids, and float ids
truncated as Keras casts them), the table's gradient (a scatter-add, repeated ids summed)
against numpy and central differences, and ids out of range."""

import numpy as np
import pytest
from op_checker import OpHarness, check_op

from kiln.ops.embedding import EmbeddingOp, scatter_add_rows_kernel

ROWS, WIDTH = 7, 5


def table(seed=0):
    return np.random.default_rng(seed).standard_normal((ROWS, WIDTH)).astype(np.float32)


def gather_reference(x, params):
    return params["emb/embeddings"][np.trunc(x).astype(np.int64)]


def scatter_reference(x, params, dy):
    grad = np.zeros_like(params["emb/embeddings"])
    np.add.at(grad, np.trunc(x).astype(np.int64), dy)
    return None, {"emb/embeddings": grad}


@pytest.mark.parametrize("ids", [
    np.array([[0, 3, 3, 6], [6, 6, 1, 0], [2, 2, 2, 2]], dtype=np.int32),
    np.array([[0.2, 3.9, 3.0, 6.5], [-0.5, 6.0, 1.7, 0.0]], dtype=np.float32),
])
def test_gather_and_scatter_add_match_numpy_and_central_differences(ids):
    dy = np.random.default_rng(1).standard_normal((*ids.shape, WIDTH)).astype(np.float32)
    result, _ = check_op(EmbeddingOp("emb", ROWS, WIDTH), ids, {"emb/embeddings": table()},
                         dy, gather_reference, reference_grads=scatter_reference)
    assert result.output.shape == (*ids.shape, WIDTH)
    assert result.input_grad is None  # token ids get no gradient


def test_rows_no_token_reads_get_a_zero_gradient_every_step():
    ids = np.array([[1, 1, 4]], dtype=np.int32)
    harness = OpHarness(EmbeddingOp("emb", ROWS, WIDTH), ids, {"emb/embeddings": table()})
    for step in range(2):  # the second step must not add to the first's gradient
        dy = np.full((1, 3, WIDTH), step + 1.0, np.float32)
        grads = harness.run(dy=dy).param_grads["emb/embeddings"]
        expected = np.zeros((ROWS, WIDTH), np.float32)
        expected[1], expected[4] = 2 * (step + 1.0), step + 1.0
        np.testing.assert_array_equal(grads, expected)


def test_scatter_add_is_the_same_for_any_number_of_row_blocks():
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 50, 400).astype(np.int32)
    grad = rng.standard_normal((400, 3)).astype(np.float32)
    results = []
    for blocks in (1, 3, 50):
        out = np.full(50 * 3, np.nan, np.float32)
        scatter_add_rows_kernel(ids, grad.reshape(-1), out, 50, 3, blocks)
        results.append(out)
    assert all(np.array_equal(results[0], other) for other in results[1:])
    expected = np.zeros((50, 3), np.float32)
    np.add.at(expected, ids, grad)
    np.testing.assert_allclose(results[0].reshape(50, 3), expected, rtol=1e-6, atol=1e-6)


def test_an_id_out_of_range_inside_the_model_reads_nan_as_jax_does():
    ids = np.array([[0, ROWS, -1]], dtype=np.int32)
    harness = OpHarness(EmbeddingOp("emb", ROWS, WIDTH), ids, {"emb/embeddings": table()},
                        training=False)
    output = harness.forward()
    np.testing.assert_array_equal(output[0, 0], table()[0])
    assert np.isnan(output[0, 1:]).all()


def test_a_3d_input_is_refused_naming_the_layer():
    with pytest.raises(ValueError, match="Embedding 'emb': expected a 2D input"):
        EmbeddingOp("emb", ROWS, WIDTH).output_dims((2, 3, 4))
