"""The Alpha language server: a thin face that answers an editor from alpha_core's analyses."""

__version__ = "0.1.0"
