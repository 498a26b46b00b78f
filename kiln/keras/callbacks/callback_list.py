"""CallbackList: forwards every hook to a list of callbacks."""

from .callback import _HOOK_NAMES, Callback
from .history import History
from .progbar_logger import ProgbarLogger


class CallbackList(Callback):
    """Forwards every hook to a list of callbacks, in order.

    Args:
        callbacks: Callbacks to notify.
        add_history: Whether to append a `History` if none is given.
        add_progbar: Whether to append a `ProgbarLogger` if none is given.
        model: Model passed to every callback's `set_model`.
        **params: Passed to every callback's `set_params` if given.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False,
                 model=None, **params):
        super().__init__()
        if isinstance(callbacks, CallbackList):  # fit(callbacks=CallbackList([...]))
            callbacks = callbacks.callbacks
        elif isinstance(callbacks, Callback):  # Keras flattens a lone callback into a list
            callbacks = [callbacks]
        self.callbacks = list(callbacks or ())
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        if add_history and self._history is None:
            self._history = History()
            self.callbacks.append(self._history)
        if add_progbar and not any(
                isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def overrides(self, hook_name):
        """Whether any callback does something in `hook_name`: not when every one has the
        base class's no-op (nor overrides the old alias it forwards to, on_batch_begin /
        on_batch_end). fit() skips a batch hook, and reading its logs back, when none does."""
        names = (hook_name, *_ALIASES.get(hook_name, ()))
        for callback in self.callbacks:
            for name in names:
                # a bound method of Callback's own function does nothing; anything else
                # (a subclass's method, LambdaCallback's instance attribute) may
                method = getattr(callback, name, None)
                if getattr(method, "__func__", None) is not getattr(Callback, name):
                    return True
        return False

    def set_params(self, params):
        super().set_params(params)
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model):
        super().set_model(model)
        # as Keras: fit returns model.history, which must be this run's History even when no
        # epoch runs (epochs=0, or a BackupAndRestore that resumes after the last epoch)
        if self._history is not None and model is not None:
            model.history = self._history
        for callback in self.callbacks:
            callback.set_model(model)


# the base class's batch hooks call these old names (Keras 2's) with the same arguments
_ALIASES = {"on_train_batch_begin": ("on_batch_begin",),
            "on_train_batch_end": ("on_batch_end",)}


def _forward(hook_name):
    # hooks of a batch or an epoch take its index first; all take `logs`, which Keras always
    # passes (a dict, empty when there is nothing to log): `lambda epoch, logs: ...` works
    positional = 2 if hook_name.endswith(("batch_begin", "batch_end", "epoch_begin",
                                          "epoch_end")) else 1

    def forward(self, *args, **kwargs):
        if len(args) < positional and "logs" not in kwargs:
            kwargs["logs"] = {}
        for callback in self.callbacks:
            getattr(callback, hook_name)(*args, **kwargs)
    forward.__name__ = forward.__qualname__ = hook_name
    forward.__doc__ = f"Calls `{hook_name}` on every callback."
    return forward


# Generated rather than written out: sixteen identical loops add nothing.
for _hook_name in _HOOK_NAMES:
    setattr(CallbackList, _hook_name, _forward(_hook_name))
