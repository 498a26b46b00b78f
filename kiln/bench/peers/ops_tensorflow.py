"""TensorFlow: `x + b` in a tf.function (NHWC: b of shape (C,); NCHW: b reshaped to
(1, C, 1, 1)), and the GradientTape gradient of that add from a given dy, in a tf.function
(the graph holds the forward add too; grappler prunes it when nothing reads it)."""

from . import ops_shapes

AVAILABLE = None


def unsupported(model, data_format, mode, precision):
    return ops_shapes.check(model, mode, precision)


def prepare(model, data_format, mode, precision):
    import tensorflow as tf
    x_np, bias_np, dy_np = ops_shapes.data(data_format)
    x, dy = tf.constant(x_np), tf.constant(dy_np)
    shape = (-1,) if data_format == "channels_last" else (1, -1, 1, 1)
    bias = tf.constant(bias_np.reshape(shape))

    @tf.function
    def forward(x, bias):
        return x + bias

    @tf.function
    def backward(x, bias, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, bias])
            y = x + bias
        return tape.gradient(y, [x, bias], output_gradients=dy)

    if mode == "forward":
        return lambda: forward(x, bias).numpy()  # .numpy(): wait for the result
    return lambda: [g.numpy() for g in backward(x, bias, dy)]
