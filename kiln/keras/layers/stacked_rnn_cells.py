"""StackedRNNCells (`keras.layers.StackedRNNCells`)."""

from .base_layer import Layer, unique_name


class StackedRNNCells(Layer):
    """Cells stacked into one: in `keras.layers.RNN(StackedRNNCells([...]))` each step feeds
    the first cell's output to the second, and so on. kiln runs each cell over the whole
    sequence as one engine op, the ops chained (every inner one returning its sequence),
    which computes the same (see rnn_base.py).

    Args: cells, a list of SimpleRNNCell, LSTMCell, GRUCell.

    Its state_size is the cells', in order; the weights are the cells', in order
    ("<rnn>/stacked_rnn_cells/lstm_cell/kernel", ...).
    """

    def __init__(self, cells, **kwargs):
        if kwargs.get("name") is None:  # Keras's snake case of the class name
            kwargs["name"] = unique_name("StackedRnnCells")
        super().__init__(**kwargs)
        cells = list(cells)
        for cell in cells:
            for attribute in ("call", "state_size"):
                if not hasattr(cell, attribute):
                    raise ValueError(f"{self.context}: all cells must have a `{attribute}` "
                                     f"attribute, got the cell {cell!r}")
        if not cells:
            raise ValueError(f"{self.context}: argument cells must hold at least one cell")
        self.cells = cells
        self._scope = None

    def nest_in(self, scope):
        """Make this stack a part of the layer (path) `scope`: the cells' weights become
        "<scope>/<stack>/<cell>/kernel"."""
        self._scope = scope
        for cell in self.cells:
            if hasattr(cell, "nest_in"):
                cell.nest_in(self.weight_prefix)

    @property
    def weight_prefix(self):
        return self.name if self._scope is None else f"{self._scope}/{self.name}"

    @property
    def state_size(self):
        return [cell.state_size for cell in self.cells]

    @property
    def output_size(self):
        last = self.cells[-1]
        if getattr(last, "output_size", None) is not None:
            return last.output_size
        size = last.state_size
        return size[0] if isinstance(size, (list, tuple)) else size

    def call(self, inputs, states, training=None):
        raise NotImplementedError(f"{self.context}: a stack of cells runs inside "
                                  "keras.layers.RNN(StackedRNNCells(...)), not on one step")

    def get_config(self):
        from ..saving.serialization import serialize_keras_object

        return {**super().get_config(),
                "cells": [serialize_keras_object(cell) for cell in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from ..saving.serialization import deserialize_keras_object

        config = dict(config)
        cells = [deserialize_keras_object(cell, custom_objects=custom_objects)
                 for cell in config.pop("cells")]
        return cls(cells, **config)
