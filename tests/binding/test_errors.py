"""kiln.binding.errors: a failing oneDNN call raises DnnlError naming what, on what, and why."""

import gc
import sys

import pytest

from kiln.binding import constants as dnnl
from kiln.binding.errors import DnnlError, check
from kiln.binding.memory import Memory, MemoryDesc, to_dims
from kiln.binding.primitive import PrimitiveDesc, default_attributes


def convolution_pd(src_dims, weights_dims, dst_dims, shapes):
    src, weights, dst = (MemoryDesc.any(src_dims), MemoryDesc.any(weights_dims),
                         MemoryDesc.any(dst_dims))
    return PrimitiveDesc(
        "dnnl_convolution_forward_primitive_desc_create", "convolution forward", shapes,
        dnnl.forward_training, dnnl.convolution_direct, src.handle, weights.handle, None,
        dst.handle, to_dims((1, 1)), to_dims((0, 0)), to_dims((0, 0)), to_dims((0, 0)),
        default_attributes().handle)


def test_convolution_with_mismatched_channels_raises_dnnl_error():
    shapes = "src [2, 3, 8, 8] weights [4, 5, 3, 3] dst [2, 4, 6, 6]"
    with pytest.raises(DnnlError) as info:
        convolution_pd((2, 3, 8, 8), (4, 5, 3, 3), (2, 4, 6, 6), shapes)
    error = info.value
    assert isinstance(error, RuntimeError)
    assert error.primitive == "convolution forward"
    assert error.shapes == shapes
    assert error.status == "invalid_arguments"
    message = str(error)
    assert "convolution forward" in message
    assert shapes in message
    assert "invalid_arguments" in message


def test_valid_convolution_is_created():
    pd = convolution_pd((2, 3, 8, 8), (4, 3, 3, 3), (2, 4, 6, 6), "ok")
    assert pd.implementation
    assert pd.md(dnnl.query_dst_md).dims == (2, 4, 6, 6)


def test_memory_descriptor_with_negative_dim_names_the_dims():
    with pytest.raises(DnnlError) as info:
        MemoryDesc.with_tag((2, -3))
    assert info.value.primitive == "memory descriptor"
    assert "[2, -3]" in str(info.value)
    assert info.value.status == "invalid_arguments"


def test_check_passes_success_and_names_unknown_status():
    check(dnnl.success, "anything")
    with pytest.raises(DnnlError, match="status 42") as info:
        check(42, "mystery op", "dims [1]")
    assert "mystery op" in str(info.value) and "dims [1]" in str(info.value)
    with pytest.raises(DnnlError, match="'unimplemented'"):
        check(dnnl.unimplemented, "reorder", "f32 -> s8")


@pytest.fixture
def unraisable():
    """Collect exceptions raised in __del__ (which Python only prints)."""
    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda info: seen.append(info.exc_value)
    try:
        yield seen
    finally:
        gc.collect()
        sys.unraisablehook = previous


def test_failed_primitive_creation_leaves_no_error_in_destructor(unraisable):
    with pytest.raises(DnnlError):
        convolution_pd((2, 3, 8, 8), (4, 5, 3, 3), (2, 4, 6, 6), "bad")
    gc.collect()
    assert unraisable == []


def test_too_small_storage_leaves_no_error_in_destructor(unraisable):
    desc = MemoryDesc.with_tag((4, 4))
    with pytest.raises(ValueError, match="too small"):
        Memory(desc, Memory(MemoryDesc.with_tag((2,))).storage)
    gc.collect()
    assert unraisable == []
