"""Keras 2's `keras.utils.vis_utils` path (old scripts import `plot_model` / `model_to_dot`
from it); they live in `model_visualization`."""

from .model_visualization import model_to_dot, plot_model  # noqa: F401

__all__ = ["model_to_dot", "plot_model"]
