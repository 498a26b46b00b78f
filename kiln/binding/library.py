"""Load libdnnl from the installed `onednn-cpu-gomp` wheel and declare the C functions kiln uses.

The wheel puts `libdnnl.so.3` under `<sys.prefix>/lib/`. It is loaded by full path so that no
other oneDNN on the machine is picked up by accident. `KILN_DNNL_LIBRARY` overrides the path.
"""

import ctypes
import os
import site
import sys
from ctypes import (
    POINTER,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint,
    c_void_p,
)

LIBRARY_NAME = "libdnnl.so.3"

dim_t = c_int64
dims_t = dim_t * 12  # DNNL_MAX_NDIMS
status_t = c_int
handle = c_void_p  # every opaque oneDNN handle (engine, stream, memory, desc, primitive, ...)


class exec_arg_t(ctypes.Structure):
    """`dnnl_exec_arg_t`: one (argument index, memory) pair of a primitive execution."""

    _fields_ = [("arg", c_int), ("memory", c_void_p)]


class version_t(ctypes.Structure):
    _fields_ = [("major", c_int), ("minor", c_int), ("patch", c_int),
                ("hash", c_char_p), ("cpu_runtime", ctypes.c_uint), ("gpu_runtime", ctypes.c_uint)]


H = handle
PH = POINTER(c_void_p)
D = POINTER(dim_t)  # const dnnl_dims_t

# name -> (return type, argument types); checked against the headers by a test.
DECLARATIONS = {
    "dnnl_version": (POINTER(version_t), []),
    "dnnl_engine_create": (status_t, [PH, c_int, c_size_t]),
    "dnnl_stream_create": (status_t, [PH, H, ctypes.c_uint]),
    "dnnl_stream_wait": (status_t, [H]),
    "dnnl_set_verbose": (status_t, [c_int]),
    "dnnl_get_effective_cpu_isa": (c_int, []),
    "dnnl_memory_desc_create_with_tag": (status_t, [PH, c_int, D, c_int, c_int]),
    "dnnl_memory_desc_create_with_strides": (status_t, [PH, c_int, D, c_int, D]),
    "dnnl_memory_desc_reshape": (status_t, [PH, H, c_int, D]),
    "dnnl_memory_desc_create_submemory": (status_t, [PH, H, D, D]),
    "dnnl_memory_desc_clone": (status_t, [PH, H]),
    "dnnl_memory_desc_destroy": (status_t, [H]),
    "dnnl_memory_desc_query": (status_t, [H, c_int, c_void_p]),
    "dnnl_memory_desc_equal": (c_int, [H, H]),
    "dnnl_memory_desc_get_size": (c_size_t, [H]),
    "dnnl_memory_create": (status_t, [PH, H, H, c_void_p]),
    "dnnl_memory_destroy": (status_t, [H]),
    "dnnl_memory_set_data_handle": (status_t, [H, c_void_p]),
    "dnnl_primitive_attr_create": (status_t, [PH]),
    "dnnl_primitive_attr_destroy": (status_t, [H]),
    "dnnl_primitive_attr_set_scratchpad_mode": (status_t, [H, c_int]),
    "dnnl_primitive_attr_set_fpmath_mode": (status_t, [H, c_int]),
    "dnnl_primitive_attr_set_post_ops": (status_t, [H, H]),
    "dnnl_primitive_attr_set_scales_mask": (status_t, [H, c_int, c_int]),
    "dnnl_post_ops_create": (status_t, [PH]),
    "dnnl_post_ops_destroy": (status_t, [H]),
    "dnnl_post_ops_append_eltwise": (status_t, [H, c_int, c_float, c_float]),
    "dnnl_primitive_desc_query_md": (H, [H, c_int, c_int]),
    "dnnl_primitive_desc_query": (status_t, [H, c_int, c_int, c_void_p]),
    "dnnl_primitive_desc_destroy": (status_t, [H]),
    "dnnl_primitive_create": (status_t, [PH, H]),
    "dnnl_primitive_execute": (status_t, [H, H, c_int, c_void_p]),
    "dnnl_primitive_destroy": (status_t, [H]),
    "dnnl_reorder_primitive_desc_create": (status_t, [PH, H, H, H, H, H]),
    "dnnl_sum_primitive_desc_create": (status_t, [PH, H, H, c_int, POINTER(c_float), PH, H]),
    "dnnl_convolution_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, H, H, H, H, D, D, D, D, H]),
    "dnnl_convolution_backward_data_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, D, D, D, D, H, H]),
    "dnnl_convolution_backward_weights_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, H, D, D, D, D, H, H]),
    "dnnl_deconvolution_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, H, H, H, H, D, D, D, D, H]),
    "dnnl_deconvolution_backward_data_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, D, D, D, D, H, H]),
    "dnnl_deconvolution_backward_weights_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, H, D, D, D, D, H, H]),
    "dnnl_eltwise_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, H, H, c_float, c_float, H]),
    "dnnl_eltwise_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, c_float, c_float, H, H]),
    "dnnl_softmax_forward_primitive_desc_create": (status_t, [PH, H, c_int, c_int, H, H, c_int, H]),
    "dnnl_softmax_backward_primitive_desc_create": (status_t, [PH, H, c_int, H, H, H, c_int, H, H]),
    "dnnl_pooling_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, H, H, D, D, D, D, D, H]),
    "dnnl_pooling_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, D, D, D, D, D, H, H]),
    "dnnl_inner_product_forward_primitive_desc_create": (status_t, [PH, H, c_int, H, H, H, H, H]),
    "dnnl_inner_product_backward_data_primitive_desc_create": (status_t, [PH, H, H, H, H, H, H]),
    "dnnl_inner_product_backward_weights_primitive_desc_create":
        (status_t, [PH, H, H, H, H, H, H, H]),
    "dnnl_binary_primitive_desc_create": (status_t, [PH, H, c_int, H, H, H, H]),
    "dnnl_concat_primitive_desc_create": (status_t, [PH, H, H, c_int, c_int, POINTER(H), H]),
    "dnnl_batch_normalization_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, c_float, ctypes.c_uint, H]),
    "dnnl_batch_normalization_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, c_float, ctypes.c_uint, H, H]),
    "dnnl_layer_normalization_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, c_float, ctypes.c_uint, H]),
    "dnnl_layer_normalization_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, H, H, H, H, c_float, ctypes.c_uint, H, H]),
    "dnnl_post_ops_append_binary": (status_t, [H, c_int, H]),
    # (post_ops, scale, zero_point, data_type): dst = conv(...) + scale * dst_before
    "dnnl_post_ops_append_sum": (status_t, [H, c_float, c_int32, c_int]),
    "dnnl_matmul_primitive_desc_create": (status_t, [PH, H, H, H, H, H, H]),
    "dnnl_prelu_forward_primitive_desc_create": (status_t, [PH, H, c_int, H, H, H, H]),
    "dnnl_prelu_backward_primitive_desc_create": (status_t, [PH, H, H, H, H, H, H, H, H]),
    "dnnl_resampling_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, POINTER(c_float), H, H, H]),
    "dnnl_resampling_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, POINTER(c_float), H, H, H, H]),
    "dnnl_reduction_primitive_desc_create": (status_t, [PH, H, c_int, H, H, c_float, c_float, H]),
    # RNN primitives: (prop kind, [activation,] direction, then the layer's memory
    # descriptors in the header's order, flags, [alpha, beta,] [forward hint,] attribute)
    "dnnl_vanilla_rnn_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, c_int, *[H] * 7, c_uint, c_float, c_float, H]),
    "dnnl_vanilla_rnn_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, c_int, *[H] * 14, c_uint, c_float, c_float, H, H]),
    "dnnl_lstm_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, *[H] * 11, c_uint, H]),
    "dnnl_lstm_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, *[H] * 22, c_uint, H, H]),
    "dnnl_gru_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, *[H] * 7, c_uint, H]),
    "dnnl_gru_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, *[H] * 14, c_uint, H, H]),
    "dnnl_lbr_gru_forward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, *[H] * 7, c_uint, H]),
    "dnnl_lbr_gru_backward_primitive_desc_create":
        (status_t, [PH, H, c_int, c_int, *[H] * 14, c_uint, H, H]),
    "dnnl_sgemm": (status_t, [c_char, c_char, dim_t, dim_t, dim_t, c_float, c_void_p, dim_t,
                              c_void_p, dim_t, c_float, c_void_p, dim_t]),
}


def find_library():
    """Return the full path of libdnnl.so.3 from the installed wheel."""
    override = os.environ.get("KILN_DNNL_LIBRARY")
    if override:
        return override
    prefixes = [sys.prefix, sys.base_prefix, site.getuserbase()]
    for prefix in prefixes:
        candidate = os.path.join(prefix, "lib", LIBRARY_NAME)
        if os.path.exists(candidate):
            return candidate
    raise OSError(
        f"kiln: {LIBRARY_NAME} not found under {', '.join(p + '/lib' for p in prefixes)}; "
        "install the oneDNN wheel with `pip install onednn-cpu-gomp==2023.2.0` "
        "or point KILN_DNNL_LIBRARY at the library")


def load():
    """Load the library and attach `argtypes`/`restype` to every declared function."""
    lib = ctypes.CDLL(find_library(), mode=ctypes.RTLD_GLOBAL)
    for name, (restype, argtypes) in DECLARATIONS.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = argtypes
    return lib


lib = load()


def cpu_has(isa):
    """Whether oneDNN runs this CPU with instructions of `isa` (a constants.cpu_isa_* mask)."""
    return lib.dnnl_get_effective_cpu_isa() & isa == isa
