"""What a person sees on a page, measured in the page: the graph's drawn area, and every text
that is cut or lies over another.

NOTE [what a person sees]
    DOM assertions pass on a page that shows nothing (an unstyled page still has its markup),
    so tests/browser/test_visual.py reads the page as drawn:

    * the graph: the pixels of each graph canvas (the page's, each compare pane's, the saved
      file's) that differ from its background: some are drawn, and the drawn area lies within
      the window;
    * the graph's texts: the canvas draws them itself, so their boxes come from the label
      placement the viewer keeps for tests (``canvas.placed``, render/texts.js): each lies
      within its canvas, and no two intersect; no title or edge label covers a node box, no
      edge crosses a module's title and no title runs into another module's outline (the
      scene's geometry at the camera); no two node boxes overlap;
    * the page's texts: every visible element with text of its own (open shadow roots
      included), the boxes of its text lines (a Range over its text nodes), clipped to the
      window and to the ancestors that clip. A text is cut when its element hides overflow and
      its content is wider or taller than its box (an ellipsis that keeps the whole text in
      its ``title`` is shortening by design), or when an ancestor that hides overflow (not one
      that scrolls) cuts its lines; two texts overlap when the visible boxes of two elements,
      neither inside the other, intersect by more than a pixel each way.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEEN = "\n".join(line for line in (Path(__file__).resolve().parent / "seen.js").read_text(encoding="utf-8").splitlines()
                 if not line.startswith("//"))
"""The measuring function (tests/browser/seen.js)."""


EDGE_PX = 2.5
"""A graph drawn nearer than this to its canvas's edge is cut (seen.js samples every 2nd pixel)."""


@dataclass
class Seen:
    """What :data:`SEEN` measured on one page."""

    viewport: tuple[int, int]
    texts: int
    cut: list[str]
    overlaps: list[str]
    graphs: list[dict[str, Any]]

    def graph_problems(self) -> list[str]:
        """Graphs with nothing drawn, or drawn (or placed) beyond the window."""
        vw, vh = self.viewport
        out = []
        for i, g in enumerate(self.graphs):
            c, d = g["canvas"], g["drawn"]
            if d is None or g["ink"] < 0.002:
                out.append(f"graph {i}: nothing drawn ({g['ink']:.4f} of the canvas)")
                continue
            if c["x1"] - c["x0"] < 150 or c["y1"] - c["y0"] < 120:
                out.append(f"graph {i}: its canvas is {c['x1'] - c['x0']:.0f}×{c['y1'] - c['y0']:.0f} px")
            if d["x0"] < -0.5 or d["y0"] < -0.5 or d["x1"] > vw + 0.5 or d["y1"] > vh + 0.5:
                out.append(f"graph {i}: drawn at {d}, beyond the {vw}×{vh} window")
        return out

    def cut_graphs(self) -> list[str]:
        """Graphs drawn up to an edge of their canvas: part of the graph is cut off."""
        return [f"graph {i}: drawn up to the canvas's edge (the graph is cut)"
                for i, g in enumerate(self.graphs) if g["margin"] is not None and g["margin"] < EDGE_PX]

    def label_problems(self) -> list[str]:
        """Graph texts beyond their canvas or over another."""
        out = []
        for i, g in enumerate(self.graphs):
            out += [f"graph {i}: label beyond the canvas: {t}" for t in g["outside"]]
            out += [f"graph {i}: labels overlap: {t}" for t in g["labelOverlaps"]]
            out += [f"graph {i}: {t}" for t in g["covered"]]
            out += [f"graph {i}: node boxes overlap: {t}" for t in g["boxOverlaps"]]
        return out


def seen(page: Any) -> Seen:
    """Measure the page as it is drawn now (:data:`SEEN`)."""
    got = page.evaluate(SEEN)
    return Seen(viewport=tuple(got["viewport"]), texts=got["texts"], cut=got["cut"], overlaps=got["overlaps"],
                graphs=got["graphs"])
