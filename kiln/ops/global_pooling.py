"""Global average / max pooling over the spatial axes: one oneDNN pooling whose window is the
whole image (max keeps its argmax workspace for backward, as Pooling2DOp does).

With keepdims the output is the 4D (N, C, 1, 1) tensor in the pooling's layout. Without, Keras
shows (N, C): the tiny pooled tensor is reordered to plain nchw, where (N, C, 1, 1) and (N, C)
are the same bytes, and handed on as a 2D view; its gradient comes back the same way.
"""

from ..binding import constants as dnnl
from ..binding.memory import Memory, MemoryDesc
from .base import Op
from .pooling import Pooling2DOp


class GlobalPooling2DOp(Op):
    """Args: name, mode ('avg' or 'max'), keepdims."""

    def __init__(self, name, mode, keepdims=False):
        self.name, self.mode, self.keepdims = name, mode, bool(keepdims)

    def output_dims(self, input_dims):
        n, c = input_dims[:2]
        return (n, c, 1, 1) if self.keepdims else (n, c)

    def forward(self, builder, x, need_input_grad=True):
        if len(x.dims) != 4 or x.flattened:
            kind = "GlobalAveragePooling2D" if self.mode == "avg" else "GlobalMaxPooling2D"
            raise ValueError(f"{kind} '{self.name}': expected a 4D input, got shape "
                             f"{x.keras_shape}")
        n, c, h, w = x.dims
        pool = Pooling2DOp(self.name, self.mode, (h, w), (1, 1), "valid")
        pooled, pool_backward = pool.forward(builder, x, need_input_grad)
        if self.keepdims:
            return pooled, pool_backward
        data_type = pooled.memory.desc.data_type
        nchw = MemoryDesc.with_tag((n, c, 1, 1), data_type, dnnl.abcd)
        matrix_desc = MemoryDesc.with_tag((n, c), data_type, dnnl.ab)
        plain = builder.reorder(pooled.memory, nchw, f"{self.name} to (N, C)")
        # the view shares the bytes: they stay the buffer's own, out of liveness sharing
        matrix = Memory(matrix_desc, builder.keep(plain).storage)

        def backward(output_grad):
            if not need_input_grad:
                return None
            grad = builder.reorder(output_grad, matrix_desc, f"{self.name} gradient to layout",
                                   backward=True)
            return pool_backward(Memory(nchw, builder.keep(grad).storage))

        return x.with_memory(matrix), backward
