"""The checker: names, types, static shapes and the brief's invariants, giving a Program."""

# the image built-ins register themselves into builtins.HANDLERS: imported with the package, so
# every reader of it (the checker, the editor's lists) sees them
from alpha_core.check import image_builtins as _image_builtins  # noqa: E402, F401
