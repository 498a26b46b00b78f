"""Primitive descriptors, ready-to-run primitives cached by shape and attributes, and bound calls.

A `BoundCall` is one entry of a step plan: a primitive plus its pre-built `dnnl_exec_arg_t[]`
array, so running it from Python is a single ctypes call (its cost: docs/performance.md,
'Decisions and their measurements').
"""

import ctypes
import threading
from collections import OrderedDict

from . import constants as dnnl
from .engine import cpu_engine, cpu_stream
from .errors import DnnlError, check
from .library import exec_arg_t, lib
from .memory import MemoryDesc
from .post_ops import NONE, Binary, Sum

# primitives the cache keeps (as oneDNN's own primitive cache): a few plans' worth of a large
# network's forward, backward and reorder primitives
DEFAULT_CAPACITY = 1024


class Attributes:
    """`dnnl_primitive_attr_t`: post-ops, user scratchpad and math mode.

    Args:
        post_ops: a PostOps value (post_ops.py); the operand of its binary item number
            `index` is argument `post_op_arg(index)` at execution.
        fpmath_mode: oneDNN math mode (bf16 down-conversion allowed or not).
        source_scales_mask: None, or the dims (bit i for dim i) along which the source is
            multiplied by scales given at execution (argument ARG_ATTR_SCALES | ARG_SRC, one
            float per index of those dims), as a reorder takes them.
    """

    def __init__(self, post_ops=NONE, fpmath_mode=dnnl.fpmath_mode_strict,
                 source_scales_mask=None):
        self.handle = None
        self.key = (post_ops.key, fpmath_mode)
        handle = ctypes.c_void_p()
        check(lib.dnnl_primitive_attr_create(ctypes.byref(handle)), "attr create")
        self.handle = handle
        # The plan owns one scratchpad buffer shared by all primitives: no hidden allocations.
        check(lib.dnnl_primitive_attr_set_scratchpad_mode(handle, dnnl.scratchpad_mode_user),
              "attr scratchpad")
        if source_scales_mask is not None:
            check(lib.dnnl_primitive_attr_set_scales_mask(handle, dnnl.ARG_SRC,
                                                          source_scales_mask), "attr scales")
        if fpmath_mode != dnnl.fpmath_mode_strict:
            check(lib.dnnl_primitive_attr_set_fpmath_mode(handle, fpmath_mode), "attr fpmath")
        if post_ops:
            chain = ctypes.c_void_p()
            check(lib.dnnl_post_ops_create(ctypes.byref(chain)), "post-ops create")
            for item in post_ops.items:
                if isinstance(item, Sum):
                    check(lib.dnnl_post_ops_append_sum(chain, item.scale, 0,
                                                       dnnl.data_type_undef), "post-ops sum")
                elif isinstance(item, Binary):
                    check(lib.dnnl_post_ops_append_binary(chain, item.alg, item.operand.handle),
                          "post-ops binary", f"alg {item.alg} {item.operand}")
                else:
                    check(lib.dnnl_post_ops_append_eltwise(chain, item.alg, item.alpha,
                                                           item.beta),
                          "post-ops eltwise", f"alg {item.alg}")
            check(lib.dnnl_primitive_attr_set_post_ops(handle, chain), "attr post-ops")
            lib.dnnl_post_ops_destroy(chain)

    def __del__(self):
        if self.handle and lib is not None:  # None at interpreter exit
            lib.dnnl_primitive_attr_destroy(self.handle)
            self.handle = None


class PrimitiveDesc:
    """An owned `dnnl_primitive_desc_t`, created by one of the `*_primitive_desc_create` calls.
    `key` is the cache key of the arguments it was made from (descriptor.py; None for others)."""

    key = None

    def __init__(self, create_function, name, shapes, *args, engine_first=True):
        self.handle = None  # so __del__ is safe when creation raises
        handle = ctypes.c_void_p()
        leading = (cpu_engine(),) if engine_first else ()
        status = getattr(lib, create_function)(ctypes.byref(handle), *leading, *args)
        check(status, name, shapes)
        self.handle = handle
        self.name = name
        self.shapes = shapes

    def __del__(self):
        if self.handle and lib is not None:  # None at interpreter exit
            lib.dnnl_primitive_desc_destroy(self.handle)
            self.handle = None

    def md(self, query, index=0):
        """The descriptor the primitive chose for one of its arguments (None if it has none)."""
        const = lib.dnnl_primitive_desc_query_md(self.handle, query, index)
        if not const:
            return None
        desc = MemoryDesc.copy_of(const)
        return desc if desc.size > 0 else None

    @property
    def implementation(self):
        """oneDNN's name for the kernel it picked, e.g. 'brgconv:avx512_core'."""
        out = ctypes.c_char_p()
        check(lib.dnnl_primitive_desc_query(self.handle, dnnl.query_impl_info_str, 0,
                                            ctypes.byref(out)), "pd query impl")
        return out.value.decode()

    @property
    def kind(self):
        """oneDNN's dnnl_primitive_kind_t of the primitive (constants.convolution, ...)."""
        out = ctypes.c_int()
        check(lib.dnnl_primitive_desc_query(self.handle, dnnl.query_primitive_kind, 0,
                                            ctypes.byref(out)), "pd query kind")
        return out.value


def post_op_arg(index):
    """The execution argument of the second operand of binary post-op number `index`."""
    return dnnl.ARG_ATTR_MULTIPLE_POST_OP_BASE * (index + 1) | dnnl.ARG_SRC_1


def reorder_pd(source_desc, target_desc):
    """A reorder from one layout to another (the only primitive not created on an engine)."""
    return PrimitiveDesc("dnnl_reorder_primitive_desc_create", "reorder",
                         f"{source_desc} -> {target_desc}",
                         source_desc.handle, cpu_engine(), target_desc.handle, cpu_engine(),
                         default_attributes().handle, engine_first=False)


def scaled_reorder_pd(source_desc, target_desc, mask):
    """target = source times a scale per index of the dims in `mask` (see Attributes), in
    any two layouts: e.g. a kernel (O, I, kh, kw) times one scale per output channel (mask 1)."""
    attributes = Attributes(source_scales_mask=mask)  # alive until the descriptor exists
    return PrimitiveDesc("dnnl_reorder_primitive_desc_create", "reorder",
                         f"{source_desc} -> {target_desc} scaled along mask {mask}",
                         source_desc.handle, cpu_engine(), target_desc.handle, cpu_engine(),
                         attributes.handle, engine_first=False)


def sum_pd(target_desc, source_descs, scales=None):
    """target = the sum of the sources times `scales` (default all 1); source 0 may be the
    target itself."""
    count = len(source_descs)
    scales = (ctypes.c_float * count)(*(scales or [1.0] * count))
    sources = (ctypes.c_void_p * count)(*[desc.handle.value for desc in source_descs])
    return PrimitiveDesc("dnnl_sum_primitive_desc_create", "sum",
                         f"{count} x {target_desc} scales {list(scales)}", target_desc.handle,
                         count, scales, sources, default_attributes().handle)


def concat_pd(target_desc, axis, source_descs, shapes):
    """target = the sources side by side along `axis` (target may be `format_tag any`)."""
    count = len(source_descs)
    sources = (ctypes.c_void_p * count)(*[desc.handle.value for desc in source_descs])
    return PrimitiveDesc("dnnl_concat_primitive_desc_create", "concat", shapes,
                         target_desc.handle, count, axis, sources, default_attributes().handle)


_DEFAULT_ATTRIBUTES = []


def default_attributes():
    """Attributes with nothing but the user scratchpad; shared by primitives without post-ops."""
    if not _DEFAULT_ATTRIBUTES:
        _DEFAULT_ATTRIBUTES.append(Attributes())
    return _DEFAULT_ATTRIBUTES[0]


class Primitive:
    """A ready-to-run primitive and the descriptor it was made from."""

    def __init__(self, pd):
        self.handle = None
        handle = ctypes.c_void_p()
        check(lib.dnnl_primitive_create(ctypes.byref(handle), pd.handle), pd.name, pd.shapes)
        self.handle = handle
        self.pd = pd
        self.name = pd.name
        self.scratchpad_desc = pd.md(dnnl.query_scratchpad_md)

    def __del__(self):
        if self.handle and lib is not None:  # None at interpreter exit
            lib.dnnl_primitive_destroy(self.handle)
            self.handle = None


class PrimitiveCache:
    """Ready-to-run primitives keyed by (kind, layouts, attributes), at most `capacity` of
    them, the least recently used dropped first.

    Creating a convolution's primitives is costly (docs/performance.md, 'Decisions and their
    measurements'); a plan for another batch size or a second model with the same shapes
    reuses them. The keys hold the batch size, so without a bound every batch size ever seen
    would keep its primitives; a dropped primitive lives on in the plans that run it. Safe to
    use from several threads (plans of two models may be built at once).
    """

    def __init__(self, capacity=DEFAULT_CAPACITY):
        self.capacity = capacity
        self._entries = OrderedDict()
        self._lock = threading.RLock()  # re-entrant: make_pd may use the cache
        self.hits = 0
        self.misses = 0

    def get(self, key, make_pd):
        with self._lock:
            primitive = self._entries.get(key)
            if primitive is None:
                self.misses += 1
                primitive = Primitive(make_pd())
                self._entries[key] = primitive
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
            else:
                self.hits += 1
                self._entries.move_to_end(key)
        return primitive

    def __len__(self):
        return len(self._entries)

    def clear(self):
        with self._lock:
            self._entries.clear()


primitive_cache = PrimitiveCache()


class BoundCall:
    """A primitive bound to the memories it reads and writes; `run()` executes it."""

    __slots__ = ("primitive", "args", "label", "_n", "_array", "_memories")

    def __init__(self, primitive, args, label):
        self.primitive = primitive
        self.label = label
        self._memories = dict(args)  # keep the Memory objects alive
        self._n = len(args)
        self._array = (exec_arg_t * self._n)(
            *[exec_arg_t(index, memory.handle) for index, memory in args.items()])
        self.args = args

    def relabeled(self, label):
        """The same call under another name (a second place in a plan)."""
        return BoundCall(self.primitive, self._memories, label)

    def run(self):
        status = lib.dnnl_primitive_execute(self.primitive.handle, cpu_stream(), self._n,
                                            self._array)
        if status != dnnl.success:
            shapes = ", ".join(f"arg {k}: {m.desc}" for k, m in self._memories.items())
            raise DnnlError(f"{self.primitive.name} ({self.label}) execute", shapes, status)


__all__ = ["Attributes", "default_attributes", "post_op_arg", "reorder_pd", "scaled_reorder_pd",
           "sum_pd", "concat_pd", "PrimitiveDesc", "Primitive", "PrimitiveCache",
           "primitive_cache", "BoundCall"]
