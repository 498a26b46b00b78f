"""Memory descriptors and memory objects over buffers that kiln allocates once.

A `MemoryDesc` says how a logical tensor (dims always in N, C, H, W or O, I, H, W order) is laid
out: a plain tag such as nhwc, or a blocked layout that a primitive chose for `format_tag any`.
A `Memory` binds a descriptor to bytes owned by a 64-byte aligned numpy array.
"""

import ctypes
import weakref

import numpy as np

from . import constants as dnnl
from .engine import cpu_engine
from .errors import check
from .library import dims_t, lib

DTYPE_TO_DNNL = {np.dtype(np.float32): dnnl.f32, np.dtype(np.int32): dnnl.s32,
                 np.dtype(np.uint8): dnnl.u8, np.dtype(np.int8): dnnl.s8}
DNNL_TO_NAME = {dnnl.f32: "f32", dnnl.bf16: "bf16", dnnl.f16: "f16", dnnl.s32: "s32",
                dnnl.u8: "u8", dnnl.s8: "s8", dnnl.data_type_undef: "undef"}
ALIGNMENT = 64


def to_dims(values):
    dims = dims_t()
    for i, v in enumerate(values):
        dims[i] = int(v)
    return dims


class MemoryDesc:
    """An owned `dnnl_memory_desc_t`."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    @classmethod
    def with_tag(cls, dims, data_type=dnnl.f32, tag=None):
        """A plain descriptor; `tag=None` means the row-major tag of len(dims) (a, ab, abc...)."""
        if tag is None:
            tag = {1: dnnl.a, 2: dnnl.ab, 3: dnnl.abc, 4: dnnl.abcd, 5: dnnl.abcde}[len(dims)]
        out = ctypes.c_void_p()
        check(lib.dnnl_memory_desc_create_with_tag(ctypes.byref(out), len(dims), to_dims(dims),
                                                   data_type, tag),
              "memory descriptor", f"dims {list(dims)} tag {tag}")
        return cls(out)

    @classmethod
    def with_strides(cls, dims, strides, data_type=dnnl.f32):
        """A plain descriptor with explicit strides (in elements), e.g. a transposed view."""
        out = ctypes.c_void_p()
        check(lib.dnnl_memory_desc_create_with_strides(ctypes.byref(out), len(dims),
                                                       to_dims(dims), data_type,
                                                       to_dims(strides)),
              "memory descriptor", f"dims {list(dims)} strides {list(strides)}")
        return cls(out)

    @classmethod
    def any(cls, dims, data_type=dnnl.f32):
        """A descriptor that lets the primitive choose the layout."""
        return cls.with_tag(dims, data_type, dnnl.format_tag_any)

    @classmethod
    def copy_of(cls, const_handle):
        """Own a copy of a descriptor that belongs to someone else (e.g. a primitive desc)."""
        out = ctypes.c_void_p()
        check(lib.dnnl_memory_desc_clone(ctypes.byref(out), const_handle), "memory desc clone")
        return cls(out)

    def reshape(self, dims):
        out = ctypes.c_void_p()
        check(lib.dnnl_memory_desc_reshape(ctypes.byref(out), self.handle, len(dims),
                                           to_dims(dims)),
              "memory desc reshape", f"{self} -> {list(dims)}")
        return MemoryDesc(out)

    def __del__(self):
        if self.handle and lib is not None:  # None at interpreter exit
            lib.dnnl_memory_desc_destroy(self.handle)
            self.handle = None

    def _query_int(self, what):
        value = ctypes.c_int()
        check(lib.dnnl_memory_desc_query(self.handle, what, ctypes.byref(value)), "md query")
        return value.value

    @property
    def ndims(self):
        return self._query_int(dnnl.query_ndims_s32)

    @property
    def dims(self):
        pointer = ctypes.POINTER(dims_t)()
        check(lib.dnnl_memory_desc_query(self.handle, dnnl.query_dims, ctypes.byref(pointer)),
              "md query dims")
        return tuple(pointer.contents[i] for i in range(self.ndims))

    @property
    def data_type(self):
        return self._query_int(dnnl.query_data_type)

    @property
    def size(self):
        """Bytes needed, including any padding of blocked layouts."""
        return lib.dnnl_memory_desc_get_size(self.handle)

    def __eq__(self, other):
        return isinstance(other, MemoryDesc) and bool(
            lib.dnnl_memory_desc_equal(self.handle, other.handle))

    __hash__ = None

    def __repr__(self):
        return f"{DNNL_TO_NAME.get(self.data_type, '?')}{list(self.dims)}"


def aligned_bytes(nbytes):
    """A zeroed uint8 numpy array whose data starts on a 64-byte boundary."""
    raw = np.zeros(nbytes + ALIGNMENT, dtype=np.uint8)
    offset = (-raw.ctypes.data) % ALIGNMENT
    return raw[offset:offset + nbytes]


class Memory:
    """A `dnnl_memory_t` over bytes kept alive by `self.storage` (a numpy uint8 array).

    Several Memory objects may share one storage (e.g. a view with a reshaped descriptor).
    `move_to` moves a memory's bytes and its views with it.
    """

    __slots__ = ("desc", "storage", "handle", "views", "__weakref__")

    def __init__(self, desc, storage=None):
        self.handle = None
        self.views = []  # weak references to the views made of this memory
        self.desc = desc
        if storage is None:
            storage = aligned_bytes(max(desc.size, 1))
        if storage.nbytes < desc.size:
            raise ValueError(f"storage of {storage.nbytes} bytes is too small for {desc}")
        self.storage = storage
        out = ctypes.c_void_p()
        check(lib.dnnl_memory_create(ctypes.byref(out), desc.handle, cpu_engine(),
                                     ctypes.c_void_p(storage.ctypes.data)),
              "memory create", repr(desc))
        self.handle = out

    def __del__(self):
        if self.handle and lib is not None:  # None at interpreter exit
            lib.dnnl_memory_destroy(self.handle)
            self.handle = None

    def view(self, desc):
        """Another descriptor over the same bytes (it follows them when they move)."""
        view = Memory(desc, self.storage)
        if len(self.views) >= 64:  # forget views already collected, so the list stays short
            self.views = [reference for reference in self.views if reference() is not None]
        self.views.append(weakref.ref(view))
        return view

    def move_to(self, storage):
        """Point this memory, and every view of it, at `storage` (the caller copied the bytes
        there): a view made while planning (a weight read transposed in backward) must not
        keep reading the old bytes once the weights are packed into their arena."""
        self.storage = storage
        check(lib.dnnl_memory_set_data_handle(self.handle, ctypes.c_void_p(storage.ctypes.data)),
              "memory set data handle", repr(self.desc))
        alive = []
        for reference in self.views:
            view = reference()
            if view is not None:
                view.move_to(storage)
                alive.append(reference)
        self.views = alive

    def as_array(self, dtype=None):
        """The raw buffer as a flat array (in whatever layout the descriptor has); `dtype`
        None reads an s32 memory as int32 and any other as float32."""
        if dtype is None:
            dtype = np.int32 if self.desc.data_type == dnnl.s32 else np.float32
        return self.storage[:self.desc.size].view(dtype)


def window_offset(desc):
    """The element offset of a window's descriptor in its buffer (0 for a whole buffer)."""
    value = ctypes.c_int64()
    check(lib.dnnl_memory_desc_query(desc.handle, dnnl.query_submemory_offset_s64,
                                     ctypes.byref(value)), "md submemory offset")
    return value.value


def layout_key(desc):
    """A hashable summary of a descriptor (dims, type and physical layout), for cache keys."""
    if desc is None:
        return None
    kind = desc._query_int(dnnl.query_format_kind)
    if kind != dnnl.blocked:
        return (desc.dims, desc.data_type, kind)
    ndims = desc.ndims
    strides = ctypes.POINTER(dims_t)()
    check(lib.dnnl_memory_desc_query(desc.handle, 14, ctypes.byref(strides)), "md strides")
    nblks = desc._query_int(263)
    blks = ctypes.POINTER(dims_t)()
    idxs = ctypes.POINTER(dims_t)()
    check(lib.dnnl_memory_desc_query(desc.handle, 264, ctypes.byref(blks)), "md inner blks")
    check(lib.dnnl_memory_desc_query(desc.handle, 265, ctypes.byref(idxs)), "md inner idxs")
    return (desc.dims, desc.data_type, kind,
            tuple(strides.contents[i] for i in range(ndims)),
            tuple(blks.contents[i] for i in range(nblks)),
            tuple(idxs.contents[i] for i in range(nblks)))
