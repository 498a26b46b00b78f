"""JAX: `x + b` under jax.jit (NHWC: b of shape (C,); NCHW: b reshaped to (1, C, 1, 1)), and
the jitted VJP of that add applied to a given dy (XLA drops the unused forward)."""

from . import ops_shapes

AVAILABLE = None


def unsupported(model, data_format, mode, precision):
    return ops_shapes.check(model, mode, precision)


def prepare(model, data_format, mode, precision):
    import jax
    import jax.numpy as jnp
    x_np, bias_np, dy_np = ops_shapes.data(data_format)
    shape = (-1,) if data_format == "channels_last" else (1, -1, 1, 1)
    x, dy = jnp.asarray(x_np), jnp.asarray(dy_np)
    bias = jnp.asarray(bias_np.reshape(shape))

    def add(x, bias):
        return x + bias

    forward = jax.jit(add)
    backward = jax.jit(lambda x, bias, dy: jax.vjp(add, x, bias)[1](dy))
    if mode == "forward":
        return lambda: forward(x, bias).block_until_ready()
    return lambda: jax.block_until_ready(backward(x, bias, dy))
