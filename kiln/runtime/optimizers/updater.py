"""Updater: applies one optimizer step to every trainable weight, over the packed arena.

The ParameterStore packs all trainable weights back to back (each padded to ALIGNMENT), so a
step is one fused parallel kernel over one flat region: gradient clipping by value or by the
global norm, Keras 3's weight decay and the update rule happen in a single pass. Only
per-weight `clipnorm` (and weights excluded from weight decay) needs each weight's own factor:
then the same kernel runs once per weight on views made when the arena was bound, after one
parallel reduction per weight. (A per-element segment table or hand-made chunks inside one
prange stopped numba from vectorizing: several times slower than a plain prange, see
docs/performance.md, 'Decisions and their measurements'.)

Optimizer slots (Adam's moments, ...) are arenas of the same layout, keyed by Keras 3's slot
names. They are re-laid out by weight name when the packing changes, and `get_state` /
`set_state` copy them exactly, so training resumes bit for bit.
"""

import math

import numpy as np

from .clipping import squared_norm

_NO_SLOT = np.zeros(0, np.float32)  # stands in for a slot an option turned off


class Updater:
    """Args: learning_rate (a float, or a callable iterations -> float: a schedule),
    decay (Keras 2: lr / (1 + decay * iterations)), weight_decay (Keras 3: w -= w * wd * lr
    before the update), clipnorm (per weight), clipvalue, global_clipnorm (over all weights),
    decay_filter (parameter name -> whether weight decay applies; all by default)."""

    kernel_slots = ()        # every slot the kernel takes, in its argument order
    slot_initial_value = 0.0

    def __init__(self, learning_rate, decay=0.0, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, decay_filter=None):
        self.learning_rate = learning_rate
        self.decay = float(decay)
        self.weight_decay = float(weight_decay or 0.0)
        self.clipnorm = float(clipnorm or 0.0)
        self.clipvalue = float(clipvalue or 0.0)
        self.global_clipnorm = float(global_clipnorm or 0.0)
        self.decay_filter = decay_filter
        self.iterations = 0
        self.slots = {}          # Keras slot name -> float32 arena over the trainable region
        self.layout = None       # ((parameter name, start, stop), ...) the slots are laid out by
        self._bound = (None, None, None)
        self._pending_slots = None

    # -- what a subclass provides -------------------------------------------------------------
    def slot_names(self):
        """Keras 3's names of the slots this configuration uses (a subset of kernel_slots:
        e.g. SGD without momentum has none)."""
        return self.kernel_slots

    def _prepare(self, step):
        """Per-step scalars before the kernels run (step = iterations + 1, as Keras's)."""

    def _run(self, views, scale, decay, clip, lr):
        """Run the kernel on views = (w, g, *slots) with float32 scalars."""
        raise NotImplementedError

    def _scalar_state(self):
        return {}

    def _set_scalar_state(self, state):
        del state

    # -- the step -----------------------------------------------------------------------------
    def current_learning_rate(self):
        rate = self.learning_rate
        base = float(rate(self.iterations)) if callable(rate) else float(rate)
        return base / (1.0 + self.decay * self.iterations)

    def apply(self, values, grads, segments=None):
        """One step over `values` / `grads` (float32 arenas). `segments` are the trainable
        weights' (name, start, stop) in them (ParameterStore.trainable_segments(), the same
        tuple while the packing holds); None means one weight spanning the whole arrays."""
        bound_values, bound_grads, bound_segments = self._bound
        if values is not bound_values or grads is not bound_grads or \
                segments is not bound_segments:
            self._bind(values, grads, segments)
        lr = self.current_learning_rate()
        self._prepare(self.iterations + 1)
        lr32, clip = np.float32(lr), np.float32(self.clipvalue)
        if self._segment_views is None:
            scale = self._global_scale() if self.global_clipnorm > 0 else 1.0
            self._run(self._region_views, np.float32(scale),
                      np.float32(self.weight_decay * lr), clip, lr32)
        else:
            for views, decays in zip(self._segment_views, self._segment_decays, strict=True):
                scale = self._clip_scale(views[1]) if self.clipnorm > 0 else 1.0
                self._run(views, np.float32(scale), np.float32(decays * lr), clip, lr32)
        self.iterations += 1

    def _clip_scale(self, grad):
        """Keras's _clip_by_norm: g * clipnorm / max(norm, clipnorm) (a zero gradient stays)."""
        norm = math.sqrt(squared_norm(grad))
        if not math.isfinite(norm):
            return math.nan
        return self.clipnorm / max(norm, self.clipnorm)

    def _global_scale(self):
        """Keras's clip_by_global_norm: clip * min(1 / norm, 1 / clip); NaN if norm is not
        finite (the step then makes the weights NaN, as in Keras)."""
        norm = math.sqrt(squared_norm(self._region_views[1]))
        if not math.isfinite(norm):
            return math.nan
        inverse = math.inf if norm == 0.0 else 1.0 / norm
        return self.global_clipnorm * min(inverse, 1.0 / self.global_clipnorm)

    # -- binding the arena --------------------------------------------------------------------
    def _bind(self, values, grads, segments):
        if values.dtype != np.float32 or grads.dtype != np.float32 or \
                values.shape != grads.shape:
            raise ValueError(f"{type(self).__name__}: values and gradients must be float32 "
                             f"arrays of one shape, got {values.dtype} {values.shape} and "
                             f"{grads.dtype} {grads.shape}")
        layout = ((None, 0, values.size),) if segments is None else tuple(
            (name, int(start), int(stop)) for name, start, stop in segments)
        end = max((stop for _, _, stop in layout), default=0)
        if end > values.size:
            raise ValueError(f"{type(self).__name__}: segments reach {end}, beyond the "
                             f"{values.size} values given")
        if layout != self.layout:
            self._relayout(layout, end)
        slots = tuple(self.slots.get(name, _NO_SLOT) for name in self.kernel_slots)
        self._region_views = (values[:end], grads[:end], *slots)
        self._segment_views = self._segment_decays = None
        excluded = self.decay_filter is not None and self.weight_decay and not all(
            self.decay_filter(name) for name, _, _ in layout)
        if self.clipnorm > 0 or excluded:
            self._segment_views = [
                (values[start:stop], grads[start:stop],
                 *(slot[start:stop] if slot.size else slot for slot in slots))
                for _, start, stop in layout]
            self._segment_decays = [
                self.weight_decay if self.decay_filter is None or self.decay_filter(name)
                else 0.0 for name, _, _ in layout]
        self._bound = (values, grads, segments)

    def _relayout(self, layout, end):
        """New slot arenas for `layout`, keeping each weight's slots whose name and size are
        unchanged (freezing one layer must not reset the others' moments)."""
        old = {name: (start, stop) for name, start, stop in (self.layout or ())}
        fresh = {}
        for slot in self.slot_names():
            arena = np.full(end, self.slot_initial_value, np.float32)
            previous = self.slots.get(slot)
            if previous is not None:
                for name, start, stop in layout:
                    if name in old and old[name][1] - old[name][0] == stop - start:
                        arena[start:stop] = previous[old[name][0]:old[name][1]]
            fresh[slot] = arena
        self.slots, self.layout = fresh, layout
        if self._pending_slots is not None:
            pending, self._pending_slots = self._pending_slots, None
            self._copy_slots(pending)

    # -- state for saving and resuming --------------------------------------------------------
    def get_state(self):
        """{'iterations': int64 array, slot name: copy of its arena, scalar slots}."""
        state = {"iterations": np.array(self.iterations, np.int64)}
        slots = self.slots if self._pending_slots is None else self._pending_slots
        state.update({name: np.array(arena, np.float32, copy=True)
                      for name, arena in slots.items()})
        state.update({name: np.array(value) for name, value in self._scalar_state().items()})
        return state

    def set_state(self, state):
        """Restore a get_state() dict. Slots given before the first step are kept until the
        arena is known, then checked against it."""
        state = dict(state)
        known = {"iterations", *self.slot_names(), *self._scalar_state()}
        unknown = sorted(set(state) - known)
        if unknown:
            raise ValueError(f"{type(self).__name__}.set_state: unknown entries {unknown}; "
                             f"expected {sorted(known)}")
        if "iterations" in state:
            self.iterations = int(np.asarray(state.pop("iterations")))
        scalars = {name: state.pop(name) for name in list(state) if name in
                   self._scalar_state()}
        self._set_scalar_state({name: float(np.asarray(v)) for name, v in scalars.items()})
        slots = {name: np.asarray(value, np.float32).reshape(-1) for name, value in
                 state.items()}
        if self.layout is None:
            self._pending_slots = slots or None
        else:
            self._copy_slots(slots)

    def _copy_slots(self, slots):
        for name, value in slots.items():
            arena = self.slots[name]
            if value.size != arena.size:
                raise ValueError(f"{type(self).__name__}.set_state: slot {name!r} has "
                                 f"{value.size} values, expected {arena.size} (a model with "
                                 "other weights?)")
            arena[...] = value
