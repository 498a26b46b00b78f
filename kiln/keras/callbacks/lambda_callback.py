"""LambdaCallback: a callback made of plain functions."""

from .callback import _HOOK_NAMES, Callback


class LambdaCallback(Callback):
    """Builds a callback from plain functions, e.g. lambdas.

    Each argument is a function with the hook's arguments (without
    `self`), e.g. `on_epoch_end=lambda epoch, logs: print(logs["loss"])`.
    Hooks not listed (e.g. `on_test_end`) may be passed by keyword too.

    Raises:
        TypeError: If a keyword argument is not a hook name.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None,
                 on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None,
                 **other_hooks):
        super().__init__()
        unknown = sorted(set(other_hooks) - set(_HOOK_NAMES))
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hook(s) {unknown}; "
                            f"expected names from {list(_HOOK_NAMES)}")
        hooks = dict(other_hooks, on_epoch_begin=on_epoch_begin,
                     on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end,
                     on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end)
        for name, function in hooks.items():
            if function is not None:
                # Instance attributes shadow the no-op methods.
                setattr(self, name, function)
