"""kiln.binding.primitive.PrimitiveCache: one ready primitive per key; plans reuse them."""

import numpy as np

from kiln.binding import constants as dnnl
from kiln.binding.memory import Memory, MemoryDesc, layout_key
from kiln.binding.primitive import PrimitiveCache, primitive_cache, reorder_pd
from kiln.binding.reorder import reorder_now
from kiln.ops.conv2d import Conv2DOp
from kiln.ops.tensor import Tensor
from kiln.plan.builder import PlanBuilder
from kiln.plan.parameters import ParameterStore
from kiln.plan.step_plan import plain_desc


def test_same_key_hits_and_builds_once():
    cache = PrimitiveCache()
    source, target = MemoryDesc.with_tag((3, 5)), MemoryDesc.with_tag((3, 5), tag=dnnl.ba)
    built = []

    def make():
        built.append(1)
        return reorder_pd(source, target)

    key = ("reorder", layout_key(source), layout_key(target))
    first = cache.get(key, make)
    second = cache.get(key, make)
    assert first is second
    assert (cache.hits, cache.misses, len(built)) == (1, 1, 1)


def test_different_shape_misses():
    cache = PrimitiveCache()
    primitives = []
    for dims in [(3, 5), (3, 5), (4, 5), (3, 6), (4, 5)]:
        source, target = MemoryDesc.with_tag(dims), MemoryDesc.with_tag(dims, tag=dnnl.ba)
        primitives.append(cache.get(("reorder", layout_key(source), layout_key(target)),
                                    lambda: reorder_pd(source, target)))
    assert (cache.hits, cache.misses) == (2, 3)
    assert primitives[0] is primitives[1] and primitives[2] is primitives[4]
    assert primitives[0] is not primitives[2] and primitives[0] is not primitives[3]


def test_capacity_drops_the_least_recently_used_primitive():
    cache = PrimitiveCache(capacity=2)
    descs = {dims: (MemoryDesc.with_tag(dims), MemoryDesc.with_tag(dims, tag=dnnl.ba))
             for dims in [(2, 3), (3, 4), (4, 5)]}

    def get(dims):
        source, target = descs[dims]
        return cache.get(("reorder", layout_key(source), layout_key(target)),
                         lambda: reorder_pd(source, target))

    first = get((2, 3))
    get((3, 4))
    assert get((2, 3)) is first  # used again: (3, 4) is now the least recent
    get((4, 5))
    assert len(cache) == 2
    assert get((2, 3)) is first and cache.misses == 3
    get((3, 4))  # dropped before: made again
    assert cache.misses == 4 and len(cache) == 2


def test_layout_key_separates_layouts_with_equal_dims():
    dims = (2, 3, 4, 5)
    nchw, nhwc = MemoryDesc.with_tag(dims), MemoryDesc.with_tag(dims, tag=dnnl.acdb)
    assert layout_key(nchw) != layout_key(nhwc)
    assert layout_key(nchw) == layout_key(MemoryDesc.with_tag(dims))
    assert layout_key(nchw) != layout_key(MemoryDesc.with_tag(dims, data_type=dnnl.s32))


def test_clear_forgets_primitives():
    cache = PrimitiveCache()
    source, target = MemoryDesc.with_tag((2, 2)), MemoryDesc.with_tag((2, 2), tag=dnnl.ba)
    key = ("reorder", layout_key(source), layout_key(target))
    cache.get(key, lambda: reorder_pd(source, target))
    cache.clear()
    cache.get(key, lambda: reorder_pd(source, target))
    assert cache.misses == 2 and cache.hits == 0


def test_cached_reorder_still_moves_the_right_bytes():
    """A primitive reused from the cache works on other memories of the same layout."""
    values = np.arange(12, dtype=np.float32)
    for _ in range(2):
        source = Memory(MemoryDesc.with_tag((3, 4)))
        target = Memory(MemoryDesc.with_tag((3, 4), tag=dnnl.ba))
        source.as_array()[:] = values
        reorder_now(source, target)
        np.testing.assert_array_equal(target.as_array(), values.reshape(3, 4).T.ravel())


def plan_conv(batch, height=9, filters=6, activation="relu", training=True):
    """Plan Conv2DOp forward+backward on the process-wide cache; return the cache deltas."""
    store = ParameterStore()
    op = Conv2DOp("cache_conv", filters, (3, 3), padding="same", activation=activation)
    dims = (batch, 3, height, 7)
    for key, (param_dims, tag) in op.parameter_dims(dims).items():
        store.add(f"cache_conv/{key}", param_dims, tag, np.zeros(param_dims, np.float32))
    builder = PlanBuilder(store, training=training)
    hits, misses = primitive_cache.hits, primitive_cache.misses
    x = Tensor(Memory(plain_desc(dims, "channels_last")), "channels_last")
    y, backward = op.forward(builder, x, need_input_grad=True)
    if training:
        backward(y.memory)
    return primitive_cache.hits - hits, primitive_cache.misses - misses


def test_plans_with_the_same_shapes_reuse_every_primitive():
    plan_conv(batch=5, height=13)
    hits, misses = plan_conv(batch=5, height=13)
    assert misses == 0 and hits >= 3  # forward, backward weights, backward data (+ reorders)


def test_plans_with_other_shapes_or_attributes_miss():
    plan_conv(batch=5, height=11)
    assert plan_conv(batch=6, height=11)[1] > 0  # another batch size
    assert plan_conv(batch=5, height=12)[1] > 0  # another height
    assert plan_conv(batch=5, height=11, filters=7)[1] > 0  # another filter count
    assert plan_conv(batch=5, height=11, activation="tanh")[1] > 0  # another fused post-op
    # an inference plan reuses the training forward where convolutions use forward_training
    # in both (AVX-512); elsewhere it has its own forward_inference convolution
    from kiln.ops import conv2d
    shared = conv2d.forward_kind(PlanBuilder(ParameterStore(), training=False)) == \
        dnnl.forward_training
    assert (plan_conv(batch=5, height=11, training=False)[1] == 0) == shared
    assert plan_conv(batch=5, height=11)[1] == 0  # and the first one is still cached
