"""The loss plot: one line per role (or the highlighted one), drawn in braille dots (2x4 per
cell) with a y axis of values, the round range under it, a title naming what is shown, and a
linear or log scale. It draws what RunState holds with alpha_core.run.chart; it decides
nothing about the run."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from alpha_core.run.chart import COLOURS, Series, chart

__all__ = ["COLOURS", "LossPlot", "Series", "draw"]


def draw(series: Sequence[Series], width: int, height: int, log: bool, what: str) -> Text:
    """The plot as text, `width` x `height` cells: a title, the plotting area with a y axis
    on its left, and the round range under it."""
    out = Text(no_wrap=True, overflow="crop")
    for text, style in chart(
        series, width, height, log, what, "l toggles, a: all/one", "l toggles"
    ):
        out.append(text, style)
    return out


class LossPlot(Widget):
    """The plot widget: `series` and `what` are set by the app on each tick."""

    DEFAULT_CSS = "LossPlot { height: 1fr; min-height: 4; }"
    log_scale: reactive[bool] = reactive(False)
    every_role: reactive[bool] = reactive(False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.series: list[Series] = []
        self.what = "the highlighted role"

    def show(self, series: list[Series], what: str) -> None:
        self.series, self.what = series, what
        self.refresh()

    def render(self) -> Text:
        size = self.content_size
        return draw(self.series, size.width, size.height, self.log_scale, self.what)
