"""PlanCache: one model's step plans, the least recently used dropped first, and the lock that
the model's plans are built and run under.

Memory: a plan owns its whole activation arena, and a model gets a plan per (kind, batch
size) -- and per input shape, for an input with None axes --, so keeping every plan made
`predict` on 1..300 samples (or on 300 sequence lengths) grow by gigabytes. The cache keeps
at most `cache_size()` plans (KILN_PLAN_CACHE_SIZE, default DEFAULT_SIZE); a plan
dropped from it is freed once no thread still runs it. `release_all()` empties the caches of
every live model (keras.backend.clear_session calls it).

Threads: the plans of one model share its weight arenas (a training step updates them, a new
plan may repack them, see parameters.py) and each plan's input, output and scratch buffers are
fixed, so two threads must never run plans of one model at the same time. Whoever builds or
runs a plan, from staging its input to copying its results out, holds `lock` (re-entrant: a
callback may predict inside evaluate). Plans of different models run concurrently.
"""

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import MutableMapping

DEFAULT_SIZE = 8  # fit with validation and predict, each with a smaller last batch, is 6
SIZE_VARIABLE = "KILN_PLAN_CACHE_SIZE"

_live_caches = weakref.WeakSet()
_live_lock = threading.Lock()


def cache_size():
    """Plans kept per model: $KILN_PLAN_CACHE_SIZE if set, else DEFAULT_SIZE."""
    text = os.environ.get(SIZE_VARIABLE)
    if text is None or text.strip() == "":
        return DEFAULT_SIZE
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise ValueError(f"environment variable {SIZE_VARIABLE} must be a whole number of "
                         f"plans >= 1, got {text!r}")
    return size


class PlanCache(MutableMapping):
    """{key: StepPlan}, ordered from least to most recently used; reading a key (`cache[key]`,
    `cache.get(key)`) makes it the most recent, storing one past `cache_size()` drops the
    least recent."""

    # one cache is one model's: equal only to itself (Mapping compares contents), and
    # hashable for the registry of live caches
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self):
        self.lock = threading.RLock()
        self._plans = OrderedDict()
        with _live_lock:
            _live_caches.add(self)

    def __getitem__(self, key):
        with self.lock:
            plan = self._plans[key]
            self._plans.move_to_end(key)
            return plan

    def __setitem__(self, key, plan):
        with self.lock:
            self._plans[key] = plan
            self._plans.move_to_end(key)
            limit = cache_size()
            while len(self._plans) > limit:
                self._plans.popitem(last=False)

    def __delitem__(self, key):
        with self.lock:
            del self._plans[key]

    def __iter__(self):
        return iter(list(self._plans))  # a snapshot: another thread may add or drop plans

    def __len__(self):
        return len(self._plans)

    def items(self):
        """A snapshot of (key, plan) pairs that does not change which plan is most recent."""
        with self.lock:
            return list(self._plans.items())

    def replace(self, plans):
        """Keep exactly `plans` (a mapping, e.g. {} to drop every plan)."""
        plans = dict(plans)  # before clearing: `plans` may be a view of this cache
        with self.lock:
            self._plans.clear()
            for key, plan in plans.items():
                self[key] = plan

    def release(self):
        """Drop every plan (their buffers are freed once no thread still runs them)."""
        with self.lock:
            self._plans.clear()

    def __repr__(self):
        return f"PlanCache({list(self._plans)})"


def release_all():
    """Drop the plans of every live model."""
    with _live_lock:
        caches = list(_live_caches)
    for cache in caches:
        cache.release()
