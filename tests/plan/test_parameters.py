"""kiln.plan.parameters.ParameterStore: packing values and gradients into the arenas the
optimizer updates."""

import numpy as np

from kiln.binding import constants as dnnl
from kiln.binding.memory import MemoryDesc
from kiln.plan.parameters import ParameterStore


def laid_out_store(names, dims=(3, 4)):
    store = ParameterStore()
    for index, name in enumerate(names):
        store.add(name, dims, dnnl.ab, np.full(dims, index + 1.0, np.float32))
        store.value_memory(name, MemoryDesc.with_tag(dims, dnnl.f32, dnnl.ab))
    store.pack()
    return store


def test_pack_takes_in_a_parameter_adopted_back_under_the_same_name():
    """A shared layer's weight leaves for another model's store and comes back: the same
    names in the same order, but a new Parameter whose value is not in the arena yet. The
    optimizer updates the arena, so pack must move the new value into it."""
    store = laid_out_store(["a/kernel", "b/kernel"])
    other = ParameterStore()
    other.adopt(store.release("b/kernel"))  # the last one: the packed order stays the same
    store.adopt(other.release("b/kernel"))
    store.value_memory("b/kernel", MemoryDesc.with_tag((3, 4), dnnl.f32, dnnl.ab))
    store.pack()
    store.values_arena[:store.trainable_size] += 10.0  # what an optimizer step writes
    np.testing.assert_array_equal(store.get_value("a/kernel"), np.full(12, 11.0, np.float32))
    np.testing.assert_array_equal(store.get_value("b/kernel"), np.full(12, 12.0, np.float32))


def test_receive_copies_the_value_into_the_store_that_keeps_its_own_laid_out_copy():
    """Two models sharing a weight: each store lays it out for its own plans (here in other
    layouts), and alternating only copies the current value across; the Memory the plans
    read stays the same object."""
    first = laid_out_store(["shared/kernel"])
    second = ParameterStore()
    second.receive("shared/kernel", first)  # adopted: first keeps its laid-out copy
    second.value_memory("shared/kernel", MemoryDesc.with_tag((3, 4), dnnl.f32, dnnl.ba))
    second.pack()
    assert second.stale and not first.stale
    read_by_plans = (first.parameters["shared/kernel"].value,
                     second.parameters["shared/kernel"].value)
    expected = np.arange(12, dtype=np.float32)
    second.set_value("shared/kernel", expected)
    second.stale = False
    for _ in range(2):
        first.receive("shared/kernel", second)
        np.testing.assert_array_equal(first.get_value("shared/kernel"), expected)
        first.values_arena[:first.trainable_size] += 1.0  # a step of the first model
        expected = expected + 1.0
        second.receive("shared/kernel", first)
        np.testing.assert_array_equal(second.get_value("shared/kernel"), expected)
    assert (first.parameters["shared/kernel"].value,
            second.parameters["shared/kernel"].value) == read_by_plans
    assert not first.stale and not second.stale  # no new plans


def test_receive_releases_a_value_no_plan_of_the_source_laid_out():
    layer_store = ParameterStore()  # where a layer creates its weights
    layer_store.add("dense/bias", (4,), dnnl.a, np.ones(4, np.float32))
    model_store = ParameterStore()
    model_store.receive("dense/bias", layer_store)
    assert "dense/bias" not in layer_store and "dense/bias" in model_store
    np.testing.assert_array_equal(model_store.get_value("dense/bias"), np.ones(4))


def test_views_made_before_packing_follow_the_values_into_the_arena():
    """An op that reads a weight through a view (BatchedMatmulOp reads its kernel transposed
    in backward) makes the view while planning, before pack() moves the value into the arena
    the optimizer updates: the view must move with it, or every later step reads the initial
    weights (a model's second training step differed from a fresh model's first)."""
    store = ParameterStore()
    store.add("k/kernel", (3, 4), dnnl.ab, np.arange(12, dtype=np.float32).reshape(3, 4))
    value = store.value_memory("k/kernel", MemoryDesc.with_tag((3, 4), dnnl.f32, dnnl.ab))
    transposed = value.view(MemoryDesc.with_tag((4, 3), dnnl.f32, dnnl.ab))
    view_of_view = transposed.view(MemoryDesc.with_tag((12,), dnnl.f32, dnnl.a))
    store.pack()
    store.values_arena[:12] += 100.0  # what an optimizer step writes
    for memory in (value, transposed, view_of_view):
        np.testing.assert_array_equal(memory.as_array()[:12], np.arange(12) + 100.0)
