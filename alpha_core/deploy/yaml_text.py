"""Block-style YAML for manifests, written without a YAML library: every string is
double-quoted as JSON quotes it (a JSON string is a YAML scalar with the same value), so no
value can be read back as another type (`"no"`, `"0777"`, `"null"` stay strings)."""

from __future__ import annotations

import json
import re

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    return json.dumps(str(value))


def _key(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) else json.dumps(key)


def _lines(value: object, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        out = []
        for k, v in value.items():
            if isinstance(v, dict | list) and v:
                out.append(f"{pad}{_key(str(k))}:")
                out += _lines(v, indent + 2)
            else:
                inline = "{}" if v == {} else "[]" if v == [] else _scalar(v)
                out.append(f"{pad}{_key(str(k))}: {inline}")
        return out
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        out = []
        for item in value:
            nested = _lines(item, indent + 2)
            out.append(f"{pad}- {nested[0].lstrip()}")
            out += nested[1:]
        return out
    return [pad + _scalar(value)]


def to_yaml(documents: list[object]) -> str:
    """The documents, `---` between them."""
    return "---\n".join("\n".join(_lines(d, 0)) + "\n" for d in documents)
