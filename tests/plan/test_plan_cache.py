"""kiln.plan.plan_cache: a model's plans, least recently used dropped first, at most
KILN_PLAN_CACHE_SIZE of them; release_all() empties every live cache."""

import gc
import weakref

import pytest

from kiln.plan import plan_cache
from kiln.plan.plan_cache import DEFAULT_SIZE, PlanCache, cache_size, release_all


class FakePlan:
    """Stands for a StepPlan: the cache only keeps references."""


def test_default_size_and_the_environment_variable(monkeypatch):
    monkeypatch.delenv("KILN_PLAN_CACHE_SIZE", raising=False)
    assert cache_size() == DEFAULT_SIZE
    monkeypatch.setenv("KILN_PLAN_CACHE_SIZE", "3")
    assert cache_size() == 3
    for bad in ["0", "-2", "many", "1.5"]:
        monkeypatch.setenv("KILN_PLAN_CACHE_SIZE", bad)
        with pytest.raises(ValueError, match=rf"KILN_PLAN_CACHE_SIZE must be a whole number "
                                             rf"of plans >= 1, got '{bad}'"):
            cache_size()


def test_least_recently_used_plan_goes_first(monkeypatch):
    monkeypatch.setenv("KILN_PLAN_CACHE_SIZE", "3")
    cache = PlanCache()
    plans = {key: FakePlan() for key in [(False, 1), (False, 2), (True, 2), ("evaluate", 2)]}
    alive = {key: weakref.ref(plan) for key, plan in plans.items()}
    for key in [(False, 1), (False, 2), (True, 2)]:
        cache[key] = plans[key]
    assert cache.get((False, 1)) is plans[(False, 1)]  # now the most recent
    cache[("evaluate", 2)] = plans[("evaluate", 2)]
    assert list(cache) == [(True, 2), (False, 1), ("evaluate", 2)]
    plans.clear()
    assert alive[(False, 2)]() is None  # dropped: nothing else holds it
    assert cache.get((False, 2)) is None


def test_items_do_not_change_the_order_and_replace_keeps_only_those():
    cache = PlanCache()
    first, second = FakePlan(), FakePlan()
    cache[(False, 1)], cache[(False, 2)] = first, second
    assert [key for key, _ in cache.items()] == [(False, 1), (False, 2)]
    assert list(cache) == [(False, 1), (False, 2)]
    cache.replace({key: plan for key, plan in cache.items() if key[1] == 2})
    assert dict(cache.items()) == {(False, 2): second}
    cache.replace({})
    assert len(cache) == 0


def test_release_all_empties_live_caches_and_forgets_dead_ones():
    caches = [PlanCache(), PlanCache()]
    for index, cache in enumerate(caches):
        cache[(False, index + 1)] = FakePlan()
    dropped = PlanCache()
    dropped[(False, 9)] = FakePlan()
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert gone() is None  # the registry of caches holds them weakly
    release_all()
    assert [len(cache) for cache in caches] == [0, 0]
    assert all(cache is not gone() for cache in plan_cache._live_caches)


def test_a_cache_equals_only_itself():
    first, second = PlanCache(), PlanCache()
    assert first != second and first == first
    assert len({first, second}) == 2
