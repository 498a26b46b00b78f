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


def test_bf16_activations_output_bf16_rows_and_an_f32_table_gradient():
    """Under mixed bfloat16 the gather writes bf16 rows (the f32 table rounded) and the
    scatter-add reads the bf16 output gradient into the f32 gradient; the mask is bf16 too."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from kiln.binding import constants as dnnl
    from kiln.binding.memory import Memory, MemoryDesc
    from kiln.ops.masks import StepMaskOp
    from kiln.ops.tensor import Tensor
    from kiln.plan.builder import PlanBuilder
    from kiln.plan.parameters import ParameterStore

    store = ParameterStore()
    store.add("emb/embeddings", (ROWS, WIDTH), dnnl.ab, table(), True)
    builder = PlanBuilder(store, training=True, data_type=dnnl.bf16)
    ids = Memory(MemoryDesc.with_tag((2, 3), dnnl.s32))
    ids.as_array()[:] = [0, 3, 6, 6, 1, 0]
    output, backward = EmbeddingOp("emb", ROWS, WIDTH).forward(builder, Tensor(ids), False)
    mask, _ = StepMaskOp("mask", 0).forward(builder, Tensor(ids), False)
    builder.keep(output.memory)
    builder.keep(mask.memory)
    dy = Memory(MemoryDesc.with_tag((2, 3, WIDTH), dnnl.bf16))
    assert backward(dy) is None
    builder.finish()
    store.pack()
    assert output.memory.desc.data_type == mask.memory.desc.data_type == dnnl.bf16
    dy.as_array(np.uint16)[:] = np.ones(2 * 3 * WIDTH, ml_dtypes.bfloat16).view(np.uint16)
    for call in builder.forward_calls + builder.backward_calls:
        call.run()

    def read(memory, shape):
        bits = memory.as_array(np.uint16)
        return bits.view(ml_dtypes.bfloat16).astype(np.float32).reshape(shape)

    rows = table()[[[0, 3, 6], [6, 1, 0]]]
    np.testing.assert_array_equal(read(output.memory, rows.shape),
                                  rows.astype(ml_dtypes.bfloat16).astype(np.float32))
    np.testing.assert_array_equal(read(mask.memory, (2, 3)), [[0, 1, 1], [1, 1, 0]])
    counts = np.array([2, 1, 0, 1, 0, 0, 2], np.float32)
    np.testing.assert_array_equal(store.get_grad("emb/embeddings").reshape(ROWS, WIDTH),
                                  np.repeat(counts[:, None], WIDTH, axis=1))
