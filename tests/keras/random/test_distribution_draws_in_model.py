"""keras.random's randint, gamma, beta and binomial inside a layer's call(), planned as draw
kernels: new values at every step from the layer's SeedGenerator, repeated for an int seed;
randint draws the eager (Keras-on-JAX) values of the same key, the others Keras's
distributions (numba's generator seeded with the key, as the eager ones are not JAX's
numbers either)."""

import numpy as np
import pytest

from kiln import keras
from kiln.keras.random.seed_generator import SeedGenerator

SHAPE = (4000, 3)


def drawing_model(draw, seed, generator=True):
    """A model whose output is x (zeros) plus `draw(shape, seed)` drawn in a layer (`seed`
    an int, or the int a SeedGenerator of the layer is made with when `generator`)."""

    class Draw(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed = keras.random.SeedGenerator(seed) if generator else seed

        def call(self, x):
            return x + draw((keras.ops.shape(x)[0], 3), self.seed)

    inputs = keras.Input((3,))
    return keras.Model(inputs, Draw()(inputs)), inputs


DRAWS = {
    "randint": (lambda shape, seed: keras.random.randint(shape, 2, 9, seed=seed),
                lambda v: np.isin(v, np.arange(2, 9)).all() and abs(v.mean() - 5.0) < 0.1),
    "gamma": (lambda shape, seed: keras.random.gamma(shape, 2.0, seed=seed),
              lambda v: (v > 0).all() and abs(v.mean() - 2.0) < 0.1
              and abs(v.var() - 2.0) < 0.2),
    "beta": (lambda shape, seed: keras.random.beta(shape, 2.0, 3.0, seed=seed),
             lambda v: ((v > 0) & (v < 1)).all() and abs(v.mean() - 0.4) < 0.01),
    "binomial": (lambda shape, seed: keras.random.binomial(shape, 5, 0.3, seed=seed),
                 lambda v: np.isin(v, np.arange(6)).all() and abs(v.mean() - 1.5) < 0.05),
}


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_draw_in_a_layer_is_new_at_every_step_with_keras_distribution(name):
    draw, distributed = DRAWS[name]
    model, _ = drawing_model(draw, seed=7)
    x = np.zeros(SHAPE, np.float32)
    first, second = model.predict(x, verbose=0), model.predict(x, verbose=0)
    assert not np.array_equal(first, second)
    assert distributed(first) and distributed(second)
    fixed, _ = drawing_model(draw, seed=7, generator=False)  # the same draw at every step
    np.testing.assert_array_equal(fixed.predict(x, verbose=0), fixed.predict(x, verbose=0))


def test_randint_in_a_layer_draws_the_eager_values_of_the_same_key():
    model, _ = drawing_model(DRAWS["randint"][0], seed=11)
    x = np.zeros((6, 3), np.float32)
    eager = SeedGenerator(11)
    for _ in range(2):  # the model's generator and this one advance alike
        np.testing.assert_array_equal(model.predict(x, verbose=0),
                                      keras.random.randint((6, 3), 2, 9, seed=eager))


def test_distribution_parameters_are_checked_inside_a_model():
    model_input = keras.Input((3,))

    class Bad(keras.layers.Layer):
        def call(self, x):
            return x + keras.random.binomial((keras.ops.shape(x)[0], 3), 2.5, 0.3)

    with pytest.raises(ValueError, match="binomial: argument counts must be a whole"):
        Bad()(model_input)
