"""Layers' dtype policies as Keras 3 serializes them, and the one policy a kiln model runs.

Keras 3 gives every layer a DTypePolicy (`dtype="mixed_bfloat16"` or the global policy when it
was made) and writes it in the layer's config as {"module": "keras", "class_name":
"DTypePolicy", "config": {"name": ...}, "registered_name": None}; Keras 2 wrote {"class_name":
"Policy", ...} or a plain name. kiln plans a whole model in one compute type, so a model takes
the policy its layers agree on (a layer given none follows the global policy) and a model whose
compute layers ask for different policies is refused, naming the layer.
"""

from .. import mixed_precision

_POLICY_CLASSES = ("DTypePolicy", "FloatDTypePolicy", "Policy")


def policy_config(name):
    """A policy as Keras 3 writes it in a layer's config."""
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name},
            "registered_name": None}


def dtype_name(dtype):
    """A dtype given as a name or as a Keras DTypePolicy config: its name."""
    if isinstance(dtype, dict) and dtype.get("class_name") in _POLICY_CLASSES:
        return (dtype.get("config") or {}).get("name")
    return getattr(dtype, "name", dtype)  # a mixed_precision.Policy


def checked_policy_name(dtype, context):
    """The policy name of a layer's dtype argument (None when not given), or a ValueError
    naming the layer, the argument and the accepted values."""
    name = dtype_name(dtype)
    if name is not None and name not in mixed_precision.POLICIES:
        raise ValueError(f"{context}: argument dtype must be one of "
                         f"{list(mixed_precision.POLICIES)} (or their DTypePolicy), got {dtype!r}")
    return name


def requested_policy(layer):
    """The policy `layer` asks for: a model's is the one it runs, a layer's its dtype argument,
    else the global policy."""
    from ..models.model import Model

    if isinstance(layer, Model) and getattr(layer, "compute_policy", None):
        return layer.compute_policy
    return layer._dtype_policy or mixed_precision.global_policy().name


def model_policy(model, layers):
    """The policy `model` runs its `layers` in (on this CPU), or a ValueError when they differ."""
    from .input_layer import InputLayer

    first = None
    for layer in layers:
        if isinstance(layer, InputLayer) or layer is model:
            continue  # an input's dtype is its data's, not a compute policy
        name = requested_policy(layer)
        if first is None:
            first = (layer, name)
        elif name != first[1]:
            raise ValueError(
                f"{layer.context}: argument dtype is {name!r} but {first[0].context} of "
                f"{model.context} uses {first[1]!r}; kiln runs one policy per model, so every "
                f"layer but the InputLayer must use the same one of "
                f"{list(mixed_precision.POLICIES)}")
    wanted = first[1] if first else mixed_precision.global_policy().name
    return mixed_precision.runnable_policy(wanted, stacklevel=4)
