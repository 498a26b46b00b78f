"""Checks shared by the layers' constructors: Keras accepts ints or pairs, names in any case.
Each error names the layer, the argument and what was expected."""

import numbers


def is_integer(value):
    """Python and numpy integers (Keras accepts `Dense(y.max() + 1)`), but not bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def pair(value, context, argument):
    """Keras accepts an int or a pair for kernel_size, strides, pool_size."""
    if is_integer(value):
        return (int(value), int(value))
    try:
        a, b = value
        return (int(a), int(b))
    except (TypeError, ValueError):
        raise ValueError(f"{context}: argument {argument} must be an int or a pair of ints, "
                         f"got {value!r}") from None


def check_choice(value, choices, context, argument):
    if not isinstance(value, str) or value.lower() not in choices:
        raise ValueError(f"{context}: argument {argument} must be one of {list(choices)}, "
                         f"got {value!r}")
    return value.lower()


def axis_argument(axis, context):
    """Keras's `axis` of the normalization layers: an int or a list / tuple of ints, kept as
    given (an int stays an int, a tuple becomes a list, as Keras stores it)."""
    values = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not values or not all(is_integer(value) for value in values):
        raise ValueError(f"{context}: argument axis must be an int or a list of ints, got "
                         f"{axis!r}")
    return [int(value) for value in axis] if isinstance(axis, (list, tuple)) else int(axis)


def positive_axes(axis, shape, context):
    """The axes named by `axis` (an int or a list) of an input of Keras shape `shape`, made
    positive and sorted; the batch axis and axes out of range are refused."""
    rank = len(shape)
    values = axis if isinstance(axis, list) else [axis]
    for value in values:
        if not -rank <= value < rank or value % rank == 0:
            raise ValueError(f"{context}: argument axis must name axes of the input of shape "
                             f"{tuple(shape)} other than the batch axis (1 to {rank - 1} or "
                             f"-{rank - 1} to -1), got {axis!r}")
    positive = sorted({value % rank for value in values})
    if len(positive) != len(values):
        raise ValueError(f"{context}: argument axis names one axis twice, got {axis!r}")
    return positive
