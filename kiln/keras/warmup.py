"""Compile and cache kiln's numba kernels ahead of the first fit().

`python -m kiln.keras.warmup` trains a tiny model for one step with each optimizer (and
with bf16 where the CPU has it), which compiles every kernel signature a plan uses into
numba's on-disk cache. Without it, the very first fit() after an install spends about 2 s
compiling; with it, fit() reaches its first step in well under a second. `make` runs it
after installing.
"""

import time
import warnings

import numpy as np


def warm_up():
    from . import Sequential, mixed_precision, optimizers
    from .layers import Conv2D, Dense, Dropout, Flatten, MaxPooling2D

    rng = np.random.default_rng(0)
    x = rng.random((4, 6, 6, 1), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 0, 1]]
    policies = ["float32"] + (["mixed_bfloat16"] if mixed_precision.native_bf16() else [])
    for policy in policies:
        mixed_precision.set_global_policy(policy)
        # one per update kernel (AdamW shares Adam's); clipnorm compiles the norm reduction
        for optimizer in (optimizers.SGD(momentum=0.9), optimizers.RMSprop(),
                          optimizers.RMSprop(momentum=0.5, centered=True),
                          optimizers.Adadelta(), optimizers.Adam(clipnorm=1.0),
                          optimizers.Nadam(), optimizers.Adamax(), optimizers.Adagrad(),
                          optimizers.Lion()):
            # pooling + dropout (fused in f32) and a dropout after a dense layer (separate)
            model = Sequential([Conv2D(16, (3, 3), activation="relu", input_shape=(6, 6, 1)),
                                MaxPooling2D(), Dropout(0.5), Flatten(),
                                Dense(8, activation="relu"), Dropout(0.5),
                                Dense(2, activation="softmax")])
            model.compile(loss="categorical_crossentropy", optimizer=optimizer,
                          metrics=["accuracy"])
            model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    mixed_precision.set_global_policy("float32")
    _warm_up_augmentation(model, x, y)
    _warm_up_losses_and_metrics()
    _warm_up_layers()
    _warm_up_custom_layer()
    _warm_up_merge_gradients()
    _warm_up_recurrent()


def _fit(model, x, y, loss, metrics=(), **compile_args):
    model.compile(loss=loss, optimizer="sgd", metrics=list(metrics), **compile_args)
    model.fit(x, y, batch_size=len(x), epochs=1, verbose=0)
    model.evaluate(x, y, batch_size=len(x), verbose=0)


def _warm_up_losses_and_metrics():
    """Every loss kernel (the element-wise kernel serves all element-wise losses: the loss is
    an argument), with the label dtypes users pass (float32 one-hot, int64 / int32 / uint8
    class ids), and the metric kernels (top-k, AUC / Precision / Recall)."""
    from . import Sequential, losses, metrics
    from .layers import Dense
    rng = np.random.default_rng(0)
    x = rng.random((4, 5), dtype=np.float32)
    ids = np.array([0, 1, 2, 1])
    one_hot = np.eye(3, dtype=np.float32)[ids]

    def head(activation, units=3):
        return Sequential([Dense(units, activation=activation, input_shape=(5,))])

    for labels in (ids, ids.astype(np.int32), ids.astype(np.uint8), ids.astype(np.float32)):
        _fit(head("softmax"), x, labels, "sparse_categorical_crossentropy",
             ["accuracy", metrics.SparseCategoricalAccuracy(),
              metrics.SparseTopKCategoricalAccuracy(k=2)])
        _fit(head("relu"), x, labels, "sparse_categorical_crossentropy")  # normalized
    _fit(head("relu"), x, one_hot, "categorical_crossentropy",
         ["accuracy", "top_k_categorical_accuracy"])
    _fit(head(None), x, one_hot, losses.CategoricalCrossentropy(from_logits=True))
    binary = (ids[:, None] == 1).astype(np.float32)
    for loss in ("binary_crossentropy", losses.BinaryCrossentropy(from_logits=True)):
        _fit(head("sigmoid", 1), x, binary, loss,
             ["accuracy", metrics.BinaryAccuracy(), "AUC", "Precision", "Recall"])
    _fit(head("relu", 1), x, binary, "binary_crossentropy")
    for loss in ("mse", "cosine_similarity"):
        _fit(head("linear"), x, one_hot, loss, ["mae", "RootMeanSquaredError"])

    from . import ops

    def traced_loss(y_true, y_pred):  # a user's keras.ops loss: its reduction kernel
        return ops.mean(ops.square(y_pred - y_true), axis=-1)

    _fit(head("linear"), x, one_hot, traced_loss)


def _warm_up_layers():
    """The numba kernels of layers outside the classic models: noise layers, the activations
    oneDNN lacks, activity regularization and weight penalties, the normalization layer's
    statistics, weight constraints, a residual add + relu, a Maximum merge."""
    from . import Input, Model, Sequential, constraints, regularizers
    from .layers import (
        Activation,
        ActivityRegularization,
        Add,
        Conv2D,
        Dense,
        Flatten,
        GaussianDropout,
        GaussianNoise,
        Maximum,
        Normalization,
        ReLU,
        SpatialDropout2D,
    )
    rng = np.random.default_rng(0)
    x = rng.random((4, 6, 6, 2), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 0, 1]]
    normalization = Normalization(input_shape=(6, 6, 2))
    normalization.adapt(x)
    model = Sequential([
        normalization, GaussianNoise(0.1), Conv2D(4, 3, activation="selu"),
        SpatialDropout2D(0.2), GaussianDropout(0.2), Flatten(),
        Dense(4, kernel_constraint=constraints.MaxNorm(2.0),
              kernel_regularizer=regularizers.L1L2(l1=0.01, l2=0.01)),
        ActivityRegularization(l1=0.01, l2=0.01),
        Dense(2, activation="softmax", kernel_constraint=constraints.NonNeg())])
    _fit(model, x, y, "categorical_crossentropy")

    inputs = Input((6, 6, 2))
    trunk = Conv2D(4, 3, padding="same")(inputs)
    branch = ReLU(max_value=6.0, negative_slope=0.1)(Conv2D(4, 3, padding="same")(trunk))
    for activation in ("softplus", "softsign", "hard_sigmoid"):
        branch = Activation(activation)(branch)
    merged = Activation("relu")(Add()([trunk, Maximum()([branch, trunk])]))
    # a residual block: a relu output read twice sums its gradients and applies the relu
    # backward in one kernel
    block_input = Conv2D(4, 3, padding="same", activation="relu")(merged)
    merged = Activation("relu")(Add()([block_input,
                                       Conv2D(4, 3, padding="same")(block_input)]))
    outputs = Dense(2, activation="softmax")(Flatten()(merged))
    _fit(Model(inputs, outputs), x, y, "categorical_crossentropy")


def _warm_up_recurrent():
    """The kernels around the RNN primitives: a reset_after GRU's bias folding and a
    sequence returned in go_backwards' order (forward and gradient); Bidirectional's joining
    and splitting of the two directions; the fused recurrence oneDNN cannot express (a Keras
    mask from an Embedding, recurrent dropout: about 35 s to compile at a first fit) with the
    embedding's gather / scatter and the input dropout of the steps."""
    from . import Sequential
    from .layers import GRU, LSTM, Bidirectional, Dense, Embedding, Flatten

    rng = np.random.default_rng(0)
    x = rng.random((4, 3, 2), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 0, 1]]
    model = Sequential([GRU(3, return_sequences=True, go_backwards=True, input_shape=(3, 2)),
                        Flatten(), Dense(2, activation="softmax")])
    _fit(model, x, y, "categorical_crossentropy")
    model = Sequential([Bidirectional(GRU(3, return_sequences=True), input_shape=(3, 2)),
                        Bidirectional(LSTM(3)), Dense(2, activation="softmax")])
    _fit(model, x, y, "categorical_crossentropy")
    ids = rng.integers(1, 5, (4, 3))
    ids[0, 2] = 0  # a masked step
    model = Sequential([Embedding(5, 2, mask_zero=True, input_shape=(3,)),
                        LSTM(3, dropout=0.2, recurrent_dropout=0.2),
                        Dense(2, activation="softmax")])
    _fit(model, ids, y, "categorical_crossentropy")
    # input dropout alone: one mask over the steps, shared by the gates (sequence_dropout.py)
    # (after a Dense, so the dropout's backward is planned too)
    model = Sequential([Dense(2, input_shape=(3, 2)), GRU(3, dropout=0.2),
                        Dense(2, activation="softmax")])
    _fit(model, x, y, "categorical_crossentropy")


def _warm_up_augmentation(model, x, y):
    """ImageDataGenerator's kernels (the affine path, the shift path, normalization) and the
    per-batch checks of batches from a generator or PyDataset: 10-25 s to compile, which would
    otherwise land in the first augmented epoch."""
    from .preprocessing.image import ImageDataGenerator
    for settings in (dict(rotation_range=10, horizontal_flip=True, channel_shift_range=0.1),
                     dict(width_shift_range=0.1, height_shift_range=0.1, rescale=0.5,
                          samplewise_center=True, samplewise_std_normalization=True)):
        flow = ImageDataGenerator(**settings).flow(x, y, batch_size=4, seed=0)
        model.fit(flow, epochs=1, verbose=0)


def _warm_up_custom_layer():
    """The broadcasting kernels a custom layer written with keras.ops runs: a per-channel
    scale and offset from add_weight (the parameter gradients are sums over the broadcast
    axes), divided by a per-image statistic (both operands broadcast), a comparison and a
    where (their zero gradients), a slice and a split (oneDNN reorders, no kernel); then a
    per-channel scale and bias read once, fused with the relu after it (ChannelAffineOp, or
    into the convolution before it)."""
    from . import Input, Model, layers, ops

    class ScaleAndNormalize(layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones")
            self.offset = self.add_weight(shape=(input_shape[-1],), initializer="zeros")

        def call(self, x):
            # the product read twice: the multiply and the add stay BroadcastBinaryOp ops (a
            # product read once would fold into ChannelAffineOp, warmed up below)
            scaled = ops.multiply(x, self.scale)
            y = ops.add(scaled, self.offset)
            energy = ops.mean(ops.square(scaled), axis=(1, 2), keepdims=True)
            y = ops.where(y > energy, y, ops.multiply(y, 0.5))
            low, high = ops.split(y[:, 1:], 2, axis=-1)
            y = ops.concatenate([y[:, :1], ops.concatenate([high, low], axis=-1)], axis=1)
            return ops.divide(ops.maximum(y, 0.0), ops.add(energy, 1.0))

    rng = np.random.default_rng(0)
    x = rng.random((4, 6, 6, 2), dtype=np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 0, 1]]
    inputs = Input((6, 6, 2))
    features = ScaleAndNormalize()(layers.Conv2D(4, 3)(inputs))
    outputs = layers.Dense(2, activation="softmax")(layers.Flatten()(features))
    _fit(Model(inputs, outputs), x, y, "categorical_crossentropy")

    class ScaleBias(layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones")
            self.bias = self.add_weight(shape=(input_shape[-1],), initializer="zeros")

        def call(self, x):
            return ops.add(ops.multiply(x, self.scale), self.bias)

    # after a convolution: folded into it (Conv2DChannelAffineOp's vector kernels); after
    # pooling: a ChannelAffineOp with its relu (12 channels: a padded blocked layout runs its
    # numba forward), and one whose relu max pooling applies
    features = layers.Activation("relu")(ScaleBias()(layers.Conv2D(12, 3)(inputs)))
    features = layers.Activation("relu")(ScaleBias()(layers.MaxPooling2D(1)(features)))
    features = layers.Activation("relu")(ScaleBias()(layers.AveragePooling2D(1)(features)))
    features = layers.MaxPooling2D()(features)
    outputs = layers.Dense(2, activation="softmax")(layers.Flatten()(features))
    _fit(Model(inputs, outputs), x, y, "categorical_crossentropy")
    _warm_up_random_draws(x, y)
    _warm_up_channel_affine_forward()


def _warm_up_random_draws(x, y):
    """keras.random inside call(): a normal draw and a dropout mask (RandomDrawOp's kernel)."""
    from . import Input, Model, layers, ops
    from . import random as keras_random

    class Noisy(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seed_generator = keras_random.SeedGenerator(0)

        def call(self, x):
            noisy = x + keras_random.normal(ops.shape(x), seed=self.seed_generator)
            return keras_random.dropout(noisy, 0.5, seed=self.seed_generator)

    inputs = Input(x.shape[1:])
    features = Noisy()(layers.Dense(4)(layers.Flatten()(inputs)))
    _fit(Model(inputs, layers.Dense(2, activation="softmax")(features)), x, y,
         "categorical_crossentropy")


def _warm_up_channel_affine_forward():
    """ChannelAffineOp's numba forward (plain nhwc / nchw, and layouts where oneDNN's binary
    has just its reference kernel): compiled here on a small nhwc case with the plan's
    argument types, with and without the relu."""
    from ..binding import constants as dnnl
    from ..binding.memory import MemoryDesc
    from ..ops.channel_affine import kernel_iteration
    from ..ops.channel_affine_kernels import forward_kernel
    desc = MemoryDesc.with_tag((2, 4, 3, 3), dnnl.f32, dnnl.acdb)
    shape, strides = kernel_iteration(desc, MemoryDesc.with_tag((1, 4, 1, 1), dnnl.f32,
                                                                dnnl.abcd))
    x = np.linspace(-1, 1, 72, dtype=np.float32)
    for relu in (False, True):
        forward_kernel(np.empty(72, np.float32), x, np.ones(4, np.float32),
                       np.zeros(4, np.float32), relu, shape, strides)


def _warm_up_merge_gradients():
    """MaximumOp / MinimumOp's gradient kernel takes its inputs as a tuple: one compilation per
    number of inputs and per data type (float32, bf16 bits), about 10 s each at a first fit."""
    from ..ops.merge import CHUNK, THREADS, extreme_backward_kernel
    for dtype in (np.float32, np.uint16):
        for count in (2, 3, 4):
            inputs = tuple(np.zeros(8, dtype) for _ in range(count))
            grads = tuple(np.zeros(8, dtype) for _ in range(count))
            extreme_backward_kernel(np.zeros(8, dtype), inputs, grads, dtype == np.uint16,
                                    np.float32(1.0),
                                    np.zeros((THREADS, count + 3, CHUNK), np.float32))


if __name__ == "__main__":
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm_up()
    print(f"kiln: kernels compiled and cached in {time.perf_counter() - start:.1f} s")
