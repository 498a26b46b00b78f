"""A plan's input buffers: integer inputs and their cast for float readers, whether its calls
can read a caller's arrays in place, and pointing the plan at the next step's arrays
(StepPlan.use_input)."""

import numpy as np

from ..binding import constants as dnnl
from ..binding.library import lib
from ..binding.memory import Memory, MemoryDesc
from ..ops.tensor import CHANNELS_LAST
from .builder import KernelCall
from .liveness import kernel_arrays


def plain_desc(tensor_dims, data_format, data_type=dnnl.f32, flattened=False):
    """The user's (numpy, C-order) layout of a logical tensor. A flattened 4D tensor's
    features are in (H, W, C) order in both data formats, as Keras flattens channels_last."""
    if len(tensor_dims) == 4:
        tag = dnnl.acdb if data_format == CHANNELS_LAST or flattened else dnnl.abcd
        return MemoryDesc.with_tag(tensor_dims, data_type, tag)
    return MemoryDesc.with_tag(tensor_dims, data_type)


def is_integer_input(tensor):
    """Whether a graph tensor is a model input of integers (held as int32 in the plan)."""
    return getattr(tensor, "dtype", "float32") in ("int32", "int64")


def cast_input(builder, values, tensor):
    """A model input of integers converted to the activation type, as Keras casts an int
    input for a float layer: one reorder per step, shared by every such reader (kept in
    `values` under the pair (tensor id, "float"))."""
    key = (id(tensor), "float")
    if key not in values:
        value = values[id(tensor)]
        plain = plain_desc(value.dims, value.data_format, builder.data_type, value.flattened)
        values[key] = value.with_memory(builder.reorder(value.memory, plain,
                                                        f"{tensor.name} to float"))
        values[key].consumers = value.consumers
    return values[key]


def kernels_read_inputs(plan, builder):
    """Whether a call reads an input buffer through something use_input() cannot re-point:
    an array a numba kernel captured when it was planned (a dropout or a max merge right
    on a model input), or another Memory over the input's bytes (a view with other dims,
    as Conv1DOp's 4D view of its 3D input). The plan must then keep reading its own input
    buffers, which use_input() fills by copying instead of re-pointing them."""
    starts = [(m.storage.ctypes.data, m.storage.ctypes.data + m.storage.nbytes)
              for m in plan.input_memories]
    followed = {id(m) for m in plan.input_memories} | {
        id(part) for _, part in plan._input_slices}  # re-pointed by use_input()

    def inside(address):
        return any(start <= address < end for start, end in starts)

    for call in builder.forward_calls + builder.backward_calls:
        if isinstance(call, KernelCall) and any(
                inside(array.ctypes.data) for array in kernel_arrays(call.arguments)):
            return True
        memories = getattr(call, "args", None) or {}
        if any(isinstance(m, Memory) and id(m) not in followed
               and inside(m.storage.ctypes.data) for m in memories.values()):
            return True
    return False


def use_input(plan, x, y=None):
    """Read the next step's input from `x` (a C-contiguous, 64-byte aligned array of the
    plan's input shape and dtype, float32 or int32 for an input of integers, or a list of
    them for several inputs) without copying it; copy the small labels `y`."""
    arrays = list(x) if isinstance(x, (list, tuple)) else [x]
    if len(arrays) != len(plan.input_arrays):
        raise ValueError(f"plan expects {len(plan.input_arrays)} inputs, got {len(arrays)}")
    if plan._copy_inputs:
        for own, array in zip(plan.input_arrays, arrays, strict=True):
            own[...] = array
        if y is not None:
            plan.labels[...] = y
        return
    # the batch feeder hands over the same staging arrays step after step: the plan already
    # reads the arrays this function last pointed it at
    pointed = getattr(plan, "_pointed_inputs", None)
    if pointed is not None and all(a is b for a, b in zip(arrays, pointed, strict=True)):
        if y is not None:
            plan.labels[...] = y
        return
    for position, (array, memory, current) in enumerate(
            zip(arrays, plan.input_memories, plan.input_arrays, strict=True)):
        if (array.shape != current.shape or array.dtype != current.dtype
                or array.ctypes.data % 64):
            raise ValueError(f"plan input {position} must be an aligned {current.dtype} array "
                             f"of shape {current.shape}, got {array.dtype} {array.shape}")
        lib.dnnl_memory_set_data_handle(memory.handle, array.ctypes.data)
        memory.storage = array.reshape(-1).view(np.uint8)
        plan.input_arrays[position] = array
    for index, part in plan._input_slices:
        offset = index * part.desc.size
        lib.dnnl_memory_set_data_handle(part.handle, arrays[0].ctypes.data + offset)
        part.storage = plan.input_memory.storage[offset:offset + part.desc.size]
    plan.inputs = plan.input_arrays[0]
    plan._pointed_inputs = arrays
    if y is not None:
        plan.labels[...] = y
