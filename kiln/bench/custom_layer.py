"""`kiln bench custom-layer`: a training step with a user's keras.ops layer against the same
model made of built-in layers only.

The custom model replaces each convolution's bias and fused relu of a classic model with a
layer a Keras user writes: a learned per-channel scale and bias from `add_weight`, applied
with `keras.ops.multiply` / `keras.ops.add`, then a relu. The built-in model is the classic one
(Conv2D with bias and relu fused into the convolution). Both run as the plans fit() runs, on
the same synthetic batch, alternating, so the ratio is of one sitting.
"""

import time

import numpy as np

from .. import keras
from ..keras import layers, ops
from .models import MODELS
from .peers import synthetic

CUSTOM_MODELS = ("mnist_cnn", "cifar10_cnn")


class ChannelScaleBias(layers.Layer):
    """y = x * scale + bias, one scale and one bias per channel (the last axis, or the first
    after the batch for channels_first)."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format

    def build(self, input_shape):
        channels = input_shape[-1 if self.data_format == "channels_last" else 1]
        shape = (channels,) if self.data_format == "channels_last" else (channels, 1, 1)
        self.scale = self.add_weight(shape=shape, initializer="ones", name="scale")
        self.bias = self.add_weight(shape=shape, initializer="zeros", name="bias")

    def call(self, x):
        return ops.add(ops.multiply(x, self.scale), self.bias)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}


def custom_model(builtin, shape, data_format):
    """The compiled classic model `builtin` with every Conv2D's bias and relu replaced by
    ChannelScaleBias + relu (the same kind of optimizer and the same loss)."""
    stack = []
    for layer in builtin.layers:
        config = layer.get_config()
        if isinstance(layer, layers.Conv2D):
            relu = config.get("activation") == "relu"
            config.update(use_bias=False, activation=None)
            stack += [layers.Conv2D.from_config(config), ChannelScaleBias(data_format)]
            if relu:
                stack.append(layers.Activation("relu"))
        else:
            stack.append(type(layer).from_config(config))
    model = keras.Sequential([keras.Input(shape), *stack])
    optimizer = type(builtin.optimizer).from_config(builtin.optimizer.get_config())
    model.compile(loss="categorical_crossentropy", optimizer=optimizer, metrics=["accuracy"])
    return model


def _train_step(model, batch, name, data_format):
    plan = model._plan(True, batch)
    x, y = synthetic.batch(name, data_format)
    plan.inputs[...] = x
    plan.labels[...] = y
    return plan.train_step


def _median_ms(step, steps):
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def command(args):
    for name in args.models:
        for data_format in args.formats:
            builtin, shape, batch = MODELS[name](data_format)
            steps = {"built-in": _train_step(builtin, batch, name, data_format)}
            custom = custom_model(builtin, shape, data_format)
            steps["custom layer"] = _train_step(custom, batch, name, data_format)
            for step in steps.values():
                for _ in range(args.warmup):
                    step()
            medians = {label: [] for label in steps}
            for _ in range(args.repeats):  # alternating: both see the machine's same moments
                for label, step in steps.items():
                    medians[label].append(_median_ms(step, args.steps))
            built_ms = float(np.median(medians["built-in"]))
            custom_ms = float(np.median(medians["custom layer"]))
            print(f"{name} {data_format}: built-in {built_ms:.1f} ms, custom layer "
                  f"{custom_ms:.1f} ms per step: {custom_ms / built_ms:.3f}x "
                  f"(medians of {args.repeats} x {args.steps} steps, batch {batch})")
    return 0


def add_parser(sub):
    parser = sub.add_parser("custom-layer", help="a step with a keras.ops per-channel scale "
                                                 "and bias layer against built-in layers")
    parser.add_argument("--models", nargs="+", choices=CUSTOM_MODELS, default=["mnist_cnn"])
    parser.add_argument("--formats", nargs="+", choices=["channels_last", "channels_first"],
                        default=["channels_last", "channels_first"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    return parser
