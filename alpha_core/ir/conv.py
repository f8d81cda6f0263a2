"""The geometry of 2-D convolution and pooling over the last two axes, shared by the checker,
code generation and the reference: output sizes and which input position a window reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """A kernel of kh x kw positions moved by `stride`, the input padded by `padding` zeros on
    every side (a padded position is skipped: it adds nothing to any sum)."""

    kh: int
    kw: int
    stride: int
    padding: int

    def out_size(self, h: int, w: int) -> tuple[int, int]:
        """Output rows and columns; 0 when the kernel does not fit."""
        oh = (h + 2 * self.padding - self.kh) // self.stride + 1
        ow = (w + 2 * self.padding - self.kw) // self.stride + 1
        return max(oh, 0), max(ow, 0)

    def attrs(self) -> tuple[tuple[str, object], ...]:
        return (("kh", self.kh), ("kw", self.kw), ("stride", self.stride), ("pad", self.padding))


def window_of(attrs: tuple[tuple[str, object], ...]) -> Window:
    d = dict(attrs)
    return Window(int(d["kh"]), int(d["kw"]), int(d["stride"]), int(d["pad"]))  # type: ignore[call-overload]
