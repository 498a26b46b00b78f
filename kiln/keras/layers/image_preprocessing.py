"""What the image preprocessing / augmentation layers share: checking their arguments as Keras 3
does (the same ranges and defaults), with errors that name the layer, the argument and the
values expected, and the base class that plans the layer's op (kiln/ops/image_*.py).

The random layers act only in training plans (fit); evaluate / predict run them as the
identity, as Keras does outside training. Resizing and CenterCrop act in every plan.
"""

import numbers

from ...graph.symbolic import apply
from .. import backend
from .base_layer import Layer
from .gaussian_noise import draw_seed

__all__ = []  # helpers only: the layers live one per file

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
AFFINE_INTERPOLATIONS = ("nearest", "bilinear")


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def factor_range(value, context, argument, bounds, open_lower=False, symmetric=True):
    """(lower, upper) of a factor given as one number f or a pair, each within `bounds`
    ((lower bound excluded when open_lower): f gives (-f, f), clipped below at the lower bound
    when not `symmetric` (Keras's base layer: RandomContrast's f gives (0, f))."""
    low, high = bounds
    expected = (f"a number or a pair of numbers in {'(' if open_lower else '['}{low}, {high}]")

    def inside(v):
        return _number(v) and (low < v if open_lower else low <= v) and v <= high

    if isinstance(value, (tuple, list)):
        if len(value) != 2 or not all(_number(v) for v in value):
            raise ValueError(f"{context}: argument {argument} must be {expected}, got "
                             f"{value!r}")
        if symmetric and not all(inside(v) for v in value) or not symmetric and (
                value[0] > high or value[1] < low):
            raise ValueError(f"{context}: argument {argument} must be {expected}, got "
                             f"{value!r}")
        lower, upper = sorted(value)
        return lower, upper
    if not inside(value):
        raise ValueError(f"{context}: argument {argument} must be {expected}, got {value!r}")
    value = abs(value)
    return (-value if symmetric else max(-value, low)), value


def choice(value, context, argument, allowed):
    if value not in allowed:
        raise ValueError(f"{context}: argument {argument} must be one of "
                         f"{', '.join(repr(a) for a in allowed)}; got {value!r}")
    return value


def positive_int(value, context, argument):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{context}: argument {argument} must be a positive integer, got "
                         f"{value!r}")
    return int(value)


def value_range_pair(value, context):
    if not isinstance(value, (tuple, list)) or len(value) != 2 \
            or not all(_number(v) for v in value):
        raise ValueError(f"{context}: argument value_range must be a pair of numbers "
                         f"(low, high), got {value!r}")
    return value


class _ImagePreprocessingLayer(Layer):
    """A layer that plans `self.op` on one 4D image input (made in the subclass's __init__)."""

    def _set_data_format(self, data_format):
        self.data_format = backend.normalize_data_format(data_format, self.context)

    def _seed(self, seed):
        if seed is not None and (not isinstance(seed, numbers.Integral)
                                 or isinstance(seed, bool)):
            raise ValueError(f"{self.context}: argument seed must be an integer or None, got "
                             f"{seed!r}")
        self.seed = seed
        return draw_seed(seed)

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise ValueError(f"{self.context}: expected a 4D image batch, got shape "
                             f"{tuple(input_shape)} (single images are not supported yet)")

    def call(self, inputs):
        return apply(self.op, inputs)
