"""The training loop (`fit`, `evaluate`, `predict`) shared by every model class."""

from .trainer import Trainer

__all__ = ["Trainer"]
