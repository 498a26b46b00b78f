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
