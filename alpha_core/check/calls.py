"""Every built-in call the checker lowers, by name: the handlers of builtins.py and of
image_builtins.py gathered in one table, explicitly (no module registers itself by being
imported). What each call takes and says is in alpha_core/ops."""

from __future__ import annotations

from alpha_core.check import builtins, image_builtins
from alpha_core.check.builtins import Handler

HANDLERS: dict[str, Handler] = {**builtins.HANDLERS, **image_builtins.HANDLERS}
