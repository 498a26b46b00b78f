"""`keras.random`: Keras 3's random functions and `SeedGenerator`.

    from kiln import keras
    x = keras.random.normal((2, 3), seed=42)          # the values Keras on JAX draws
    gen = keras.random.SeedGenerator(1337)
    a, b = keras.random.uniform((4,), seed=gen), keras.random.uniform((4,), seed=gen)

In a layer's call(), normal / uniform / truncated_normal on a shape whose first axis is the
batch (`(ops.shape(x)[0], dim)`) and dropout of a tensor become ops of the model, drawn again
at every step from the layer's SeedGenerator (see docs/random.md).
"""

from .discrete import categorical, randint, shuffle
from .distributions import beta, binomial, gamma
from .draws import dropout, normal, truncated_normal, uniform
from .seed_generator import SeedGenerator

__all__ = ["SeedGenerator", "beta", "binomial", "categorical", "dropout", "gamma", "normal",
           "randint", "shuffle", "truncated_normal", "uniform"]
