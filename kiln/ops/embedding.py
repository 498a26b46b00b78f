"""EmbeddingOp (Keras Embedding): rows of a (input_dim, output_dim) table gathered by token id.

Forward is a gather: (N, T) ids -> (N, T, output_dim), a plain 3D tensor (batch, steps,
features) as Conv1D's channels_last tensors. Backward is the table's gradient, a scatter-add of
the output gradient's rows into the rows of their ids. oneDNN has neither, so both are numba
kernels:

- the gather runs in parallel over the tokens, each writing its own output row;
- the scatter-add runs in parallel over blocks of table rows: every block reads all the ids
  and adds only into its own rows, in token order. No two threads write one row, and each
  row's sum is taken in the same order whatever the thread count, so the gradient is
  deterministic (no atomics, no per-thread copies of the table to sum).

Ids come in as the plan holds them: int32 for a model input of integers, or floats (a float
input, as Keras's Embedding casts it to int32: truncated toward zero). The data adapters check
the ids of a model input against input_dim before a step runs (an error naming the layer);
an id out of range that reaches the kernel anyway (computed inside the model) gives a row of
NaN and no gradient, as JAX's gather fills out-of-range rows. The ids get no gradient.

Under mixed bfloat16 the kernels work in float32 (the table's master copy) and one reorder
converts the output to bfloat16 (and the output gradient back).
"""

import numpy as np

from ..binding import constants as dnnl
from ..binding.memory import MemoryDesc
from .base import Op
from .numba_config import PARALLEL, THREADS, njit, prange
from .tensor import Tensor


@njit(**PARALLEL)
def gather_rows_kernel(ids, table, out, rows, width):
    """out[i, :] = table[int(ids[i]), :] for every token i (NaN for an id out of range)."""
    for i in prange(ids.size):
        row = int(ids[i])
        base = i * width
        if row < 0 or row >= rows:
            for j in range(width):
                out[base + j] = np.nan
            continue
        start = row * width
        for j in range(width):
            out[base + j] = table[start + j]


@njit(**PARALLEL)
def scatter_add_rows_kernel(ids, grad, table_grad, rows, width, blocks):
    """table_grad = 0, then table_grad[int(ids[i]), :] += grad[i, :] for every token i in
    order; parallel over `blocks` blocks of table rows, each writing only its own rows."""
    per_block = (rows + blocks - 1) // blocks
    for block in prange(blocks):
        low = block * per_block
        high = min(rows, low + per_block)
        for k in range(low * width, high * width):
            table_grad[k] = 0.0
        for i in range(ids.size):
            row = int(ids[i])
            if row >= low and row < high:
                base = i * width
                start = row * width
                for j in range(width):
                    table_grad[start + j] += grad[base + j]


class EmbeddingOp(Op):
    """Args: name, input_dim (rows of the table: ids are in [0, input_dim)), output_dim
    (features per token), table (the weight's short name: the weight is "<name>/<table>",
    (input_dim, output_dim); keras.ops.take(weight, ids) names another)."""

    reads_integers = True

    def __init__(self, name, input_dim, output_dim, table="embeddings"):
        self.name = name
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        self.table = str(table)

    def output_dims(self, input_dims):
        if len(input_dims) != 2:
            raise ValueError(f"Embedding '{self.name}': expected a 2D input (batch, steps) of "
                             f"token ids, got dims {tuple(input_dims)}")
        return (*input_dims, self.output_dim)

    def parameter_dims(self, input_dims):
        return {self.table: ((self.input_dim, self.output_dim), dnnl.ab)}

    def forward(self, builder, x, need_input_grad=True):
        table_name = f"{self.name}/{self.table}"
        id_type = dnnl.s32 if x.memory.desc.data_type == dnnl.s32 else dnnl.f32
        ids = builder.reorder(x.memory, MemoryDesc.with_tag(x.dims, id_type),
                              f"{self.name} ids to plain")
        table_desc = MemoryDesc.with_tag((self.input_dim, self.output_dim), dnnl.f32)
        table = builder.param(table_name, table_desc)
        out_dims = self.output_dims(x.dims)
        rows = self.input_dim
        width = self.output_dim
        plain = MemoryDesc.with_tag(out_dims, dnnl.f32)
        gathered = builder.allocate(plain)
        builder.add_forward(builder.memory_kernel(
            gather_rows_kernel, (ids, table, gathered, rows, width), f"{self.name} gather"))
        output = gathered
        if builder.data_type != dnnl.f32:
            output = builder.reorder(gathered, MemoryDesc.with_tag(out_dims, builder.data_type),
                                     f"{self.name} output to {builder.data_type}")

        def backward(output_grad):
            if builder.wants_grad(table_name):
                grad = builder.reorder(output_grad, plain, f"{self.name} gradient to plain",
                                       backward=True)
                table_grad = builder.param_grad(table_name, table_desc)
                builder.add_backward(builder.memory_kernel(
                    scatter_add_rows_kernel,
                    (ids, grad, table_grad, rows, width, min(THREADS, rows)),
                    f"{self.name} scatter-add"))
            return None  # token ids have no gradient

        return Tensor(output, x.data_format, backward_reads_memory=False), backward
