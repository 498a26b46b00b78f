"""What a model checks before each plan lookup (Model._sync): every weight held by the
model's store, and each layer told whether it is frozen, the trainable flags being part of
a plan's key.

This runs before every step of fit / evaluate, so the common case (nothing moved, no flag
changed) costs one walk over the layers: the model's weights list (a search for duplicates
in every layer) is only made when a weight has to move, and the flags are compared as a dict
before being sorted into the plan key.
"""


def sync_weights(model, model_class):
    """Returns the trainable flags, a sorted tuple of (weight path, trainable); a change
    drops the model's plans. `model_class`: Model (its sub-models walk their `layers`)."""
    store = model.store
    flags, foreign = walk_flags(model, model_class)
    if store.stale or foreign:
        for weight in model.weights:
            weight.move_to(store)  # a copy of the value once this store has it
        if store.stale:  # parameters came or went: new plans, flags set again
            store.stale = False
            model._plans = {}
            model._trainable_flags = None  # adopted parameters carry another store's flags
    if model._trainable_flags is not None and flags == model.__dict__.get(
            "_trainable_flag_values"):
        return model._trainable_flags
    signature = tuple(sorted(flags.items()))
    if signature != model._trainable_flags:
        for path, trainable in flags.items():
            store.set_trainable(path, trainable)
        model._trainable_flags = signature
        model._plans = {}
    model.__dict__["_trainable_flag_values"] = flags
    return signature


def walk_flags(model, model_class):
    """({weight path: trainable}, whether a weight is held by another store than the
    model's), telling each layer on the way whether it is frozen (its own trainable=False or
    an enclosing layer's)."""
    flags, store, foreign = {}, model.store, []

    def walk(layer, enclosing_trainable):
        active = enclosing_trainable and layer.trainable
        layer.set_frozen(not active)
        for weight in layer._weights:
            flags[weight.path] = active and weight.trainable
            if weight.store is not store:
                foreign.append(weight)
        for sub in (layer.layers if isinstance(layer, model_class) else layer._tracked):
            walk(sub, active)

    walk(model, True)
    return flags, bool(foreign)
