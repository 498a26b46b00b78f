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
