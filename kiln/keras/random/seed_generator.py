"""`keras.random.SeedGenerator` and how each keras.random function turns its `seed` argument
into a threefry key (Keras 3's `draw_seed`).

A SeedGenerator's state is the key (seed, counter): each draw uses it and adds 1 to the
counter, as Keras's `SeedGenerator.next()`, so `SeedGenerator(1337)` draws with the keys
(1337, 0), (1337, 1), ... as Keras on JAX does, and the values are JAX's. A draw inside a
model shares the state array with its RandomDrawOp, whose kernel advances it at every step.
An int seed is the fixed key (seed, 0): the same values at every call, as in Keras. No seed
uses a global SeedGenerator, made again after `keras.utils.set_random_seed`.
"""

import itertools

import numpy as np

from ..initializers import seeds

_MASK = 0xFFFFFFFF
_names = itertools.count()


class SeedGenerator:
    """Args (Keras 3's): seed (an int, or None for one drawn from the generator that
    `keras.utils.set_random_seed` seeds), name."""

    def __init__(self, seed=None, name=None, **kwargs):
        if kwargs.keys() - {"backend"}:
            raise TypeError(f"keras.random.SeedGenerator: unexpected keyword argument(s) "
                            f"{sorted(kwargs.keys() - {'backend'})}")
        if seed is not None and not is_int(seed):
            raise ValueError(f"keras.random.SeedGenerator: argument seed must be an int or "
                             f"None, got {seed!r}")
        self._initial_seed = seed
        if name is None:
            count = next(_names)
            name = "seed_generator" if count == 0 else f"seed_generator_{count}"
        self.name = name
        seed = seeds.default_seed() if seed is None else int(seed)
        self.key_state = np.array([seed & _MASK, 0], np.uint64)  # read by planned draws

    @property
    def state(self):
        """The key (seed, counter) the next draw uses, as Keras's uint32 state."""
        return (self.key_state & _MASK).astype(np.uint32)

    def next(self, ordered=True):
        """The key of this draw; the state moves on (Keras's `next`)."""
        key = (int(self.key_state[0]), int(self.key_state[1]) & _MASK)
        if ordered:
            self.key_state[1] += np.uint64(1)
        else:
            self.key_state[:] = (self.key_state + np.uint64(1)) * np.uint64(5387) \
                % np.uint64(933199)
        return key

    def get_config(self):
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<SeedGenerator name={self.name} state={tuple(int(v) for v in self.state)}>"


def is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


_global = {"generator": None, "source": None}


def global_seed_generator():
    """The generator of draws without a seed, made again after set_random_seed."""
    if _global["generator"] is None or _global["source"] is not seeds._generator[0]:
        _global["source"] = seeds._generator[0]
        _global["generator"] = SeedGenerator(name="global_seed_generator")
    return _global["generator"]


def check_seed(seed, function):
    if seed is None or is_int(seed) or isinstance(seed, SeedGenerator):
        return
    raise ValueError(f"keras.random.{function}: argument seed must be an int, a "
                     f"keras.random.SeedGenerator or None, got {seed!r}")


def draw_key(seed, function):
    """The key (seed, counter) of one eager draw."""
    check_seed(seed, function)
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if seed is None:
        return global_seed_generator().next()
    return int(seed) & _MASK, 0


def planned_state(seed, function):
    """(key state array, advance) of a draw inside a model: a SeedGenerator's own state (a new
    key at every step), an int seed's fixed key, or a new SeedGenerator's for no seed."""
    check_seed(seed, function)
    if isinstance(seed, SeedGenerator):
        return seed.key_state, 1
    if seed is None:
        return SeedGenerator().key_state, 1
    return np.array([int(seed) & _MASK, 0], np.uint64), 0
