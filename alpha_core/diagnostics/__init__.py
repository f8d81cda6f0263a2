"""Refusals by name: the one Diagnostic type, the registry of names, and the plain renderer."""

from alpha_core.diagnostics.diagnostic import Diagnostic, Related

__all__ = ["Diagnostic", "Related"]
