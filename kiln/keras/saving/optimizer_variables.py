"""An optimizer's state as Keras 3 lists its variables, and back into kiln's arenas.

Keras 3 saves `optimizer.variables`: `iteration`, then `learning_rate` (unless it is a
schedule), then each slot of each trainable variable, in the order the optimizer's build()
made them (keras/src/optimizers/*.py: Adam makes momentum and velocity interleaved per
variable, RMSprop all velocities, then all momentums, ...), each slot in its variable's shape.
kiln keeps one arena per slot over all trainable weights in the engine's (often blocked)
layouts. This module converts between the two through each weight's own reorder, so a Keras
optimizer state resumes in kiln and kiln's in Keras. The order per optimizer is the table
below; an optimizer that has not stepped has no slots in either framework.
"""

import numpy as np

from ...binding.memory import Memory
from ...binding.reorder import reorder_now

# Keras 3's slot groups per optimizer, in build() order: each group is one
# add_optimizer_variables call, whose names are interleaved per variable.
_SLOT_GROUPS = {
    "SGD": (("momentum",),),
    "RMSprop": (("velocity",), ("momentum",), ("average_gradient",)),
    "Adam": (("momentum", "velocity"), ("velocity_hat",)),
    "AdamW": (("momentum", "velocity"), ("velocity_hat",)),
    "Nadam": (("momentum", "velocity"),),
    "Adamax": (("m", "norm"),),
    "Adagrad": (("accumulator",),),
    "Adadelta": (("accumulated_grad", "accumulated_delta_var"),),
    "Lion": (("momentum",),),
}


def slot_order(optimizer, slot_names):
    """[(group index, slot name)] of the slots in use, in Keras's build order."""
    groups = _SLOT_GROUPS.get(type(optimizer).__name__)
    if groups is None:
        raise ValueError(f"optimizer {type(optimizer).__name__}: kiln does not know Keras's "
                         "order of its variables")
    return [group for group in groups if all(name in slot_names for name in group)]


def _trainable_weights(model):
    return list(model.trainable_weights)


def keras_variables(model):
    """The optimizer's variables as Keras 3 saves them: a list of numpy arrays."""
    optimizer = model.optimizer
    state = optimizer.get_state()
    values = [np.asarray(state["iterations"], np.int64)]
    if optimizer._schedule is None:
        values.append(np.asarray(state["learning_rate"], np.float32))
    updater = optimizer._updater
    slots = {name: state[name] for name in updater.slot_names() if name in state}
    if not slots or updater.layout is None:
        return values  # not stepped yet: Keras has no slots either
    segments = {name: (start, stop) for name, start, stop in updater.layout}
    weights = _trainable_weights(model)
    for group in slot_order(optimizer, slots):
        for weight in weights:
            if weight.path not in segments:
                raise ValueError(f"optimizer state: weight '{weight.path}' has no slots (the "
                                 "model's trainable weights changed since the last step)")
            start, stop = segments[weight.path]
            for name in group:
                values.append(_to_keras(model.store, weight, slots[name][start:stop]))
    return values


def _to_keras(store, weight, segment):
    parameter = store.parameters[weight.path]
    source = Memory(parameter.value.desc)
    source.as_array()[:] = segment[:source.desc.size // 4]
    out = Memory(parameter.user_desc)
    reorder_now(source, out)
    return out.as_array().copy().reshape(weight.shape)


def _to_engine(store, weight, value):
    parameter = store.parameters[weight.path]
    source = Memory(parameter.user_desc)
    source.as_array()[:] = np.asarray(value, np.float32).reshape(-1)
    out = Memory(parameter.value.desc)
    reorder_now(source, out)
    return out.as_array().copy()


def check_keras_variables(model, values, where):
    """The error message for a Keras variable list that does not fit the model's optimizer
    (counts and shapes), or None."""
    optimizer = model.optimizer
    fixed = 1 + (optimizer._schedule is None)
    if len(values) == fixed:
        return None
    weights = _trainable_weights(model)
    slot_names = optimizer._updater.slot_names()
    groups = slot_order(optimizer, slot_names)
    expected = fixed + sum(len(group) for group in groups) * len(weights)
    if len(values) != expected:
        return (f"{where}: the saved {type(optimizer).__name__} has {len(values)} variables, "
                f"this model's needs {expected} ({fixed} + {len(weights)} trainable weights x "
                f"slots {[name for group in groups for name in group]})")
    index = fixed
    for group in groups:
        for weight in weights:
            for name in group:
                if tuple(np.shape(values[index])) != weight.shape:
                    return (f"{where}: optimizer variable {index} ({name} of "
                            f"'{weight.path}') has shape {tuple(np.shape(values[index]))}, "
                            f"expected {weight.shape}")
                index += 1
    return None


def set_keras_variables(model, values, batch_size=32):
    """Loads a Keras variable list (checked with check_keras_variables) into the optimizer.

    The slots go into kiln's arenas in each weight's engine layout, which exists once a
    training plan does: one is made here (for `batch_size`; plans for other sizes share the
    weights' layouts)."""
    optimizer = model.optimizer
    fixed = 1 + (optimizer._schedule is None)
    state = {"iterations": np.asarray(values[0], np.int64)}
    if fixed == 2:
        state["learning_rate"] = np.asarray(values[1], np.float32)
    if len(values) > fixed:
        model._plan(True, batch_size)
        segments = model.store.trainable_segments()
        end = max((stop for _, _, stop in segments), default=0)
        places = {name: (start, stop) for name, start, stop in segments}
        updater = optimizer._updater
        groups = slot_order(optimizer, updater.slot_names())
        arenas = {name: np.full(end, updater.slot_initial_value, np.float32)
                  for group in groups for name in group}
        index = fixed
        for group in groups:
            for weight in _trainable_weights(model):
                start, stop = places[weight.path]
                for name in group:
                    engine = _to_engine(model.store, weight, values[index])
                    arenas[name][start:start + engine.size] = engine
                    index += 1
        state.update(arenas)
    optimizer.set_state(state)
