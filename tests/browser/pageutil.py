"""Helpers that act on the playground page the way a user would (type, run, read the graph)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradtrace.lessons import lesson
from pageguard import wait_until

FIXTURES = Path(__file__).resolve().parent / "fixtures"
READY_TIMEOUT_MS = 60_000


def ready_generation(page: Any) -> int:
    """How many documents the page has finished drawing so far."""
    return int(page.evaluate("Number(document.body.dataset.ready || 0)"))


def wait_drawn(page: Any, before: int) -> None:
    """Wait until the page has drawn a document after generation ``before``."""
    wait_until(page, f"Number(document.body.dataset.ready || 0) > {before}", timeout=READY_TIMEOUT_MS)


FRAMES = """() => new Promise((done) => {
  let n = 3;
  const f = () => (--n ? requestAnimationFrame(f) : done());
  requestAnimationFrame(f);
})"""
SETTLED = """() => document.getAnimations().every((a) => a.playState !== "running")
  && !(window.gradtrace?.app?.viewer?.layout?.pending?.size)"""


def settled(page: Any) -> None:
    """Wait until the page has drawn what the test just did: counted in frames and in the work
    still pending (a layout in the worker, a CSS transition), never in milliseconds, so a loaded
    machine makes it later, not wrong. Frames first, so that work the action started is pending
    by then; frames again after, so that its result is drawn."""
    page.evaluate(FRAMES)
    wait_until(page, SETTLED, timeout=READY_TIMEOUT_MS)
    page.evaluate(FRAMES)


def set_code(page: Any, code: str) -> None:
    """Replace the editor's text as a user pasting it would (no auto-indent of pasted text)."""
    page.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)


def run_code(page: Any, code: str | None = None) -> None:
    """Optionally replace the code, press Run, and wait until the result is drawn."""
    if code is not None:
        set_code(page, code)
    before = ready_generation(page)
    page.get_by_role("button", name=re.compile(r"^Run\b")).click()  # not "RuntimeError …" in the node list
    wait_drawn(page, before)


def run_example(page: Any, key: str) -> dict[str, Any]:
    """Pick a lesson from the gallery (by id, ``chain_rule``, as gradtrace.lessons names it),
    run it, and return the drawn document."""
    title = lesson(key).title
    page.get_by_text("Examples", exact=True).click()
    page.get_by_role("button", name=re.compile("^" + re.escape(title))).click()
    run_code(page)
    return dict(page.evaluate("window.gradtrace.app.doc"))


def node_texts(page: Any) -> list[str]:
    """The accessible list that mirrors the drawn graph, one text per visible node."""
    return [t.strip() for t in page.get_by_role("list", name="Graph nodes").locator("li").all_inner_texts()]


def canvas_ink(page: Any) -> float:
    """Fraction of the graph canvas's pixels that differ from its background colour."""
    return float(page.evaluate("""() => {
        const c = document.querySelector('#graph canvas.gt-base');
        const ctx = c.getContext('2d');
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        const [r, g, b] = [d[0], d[1], d[2]];
        let ink = 0;
        for (let i = 0; i < d.length; i += 16) {
            if (Math.abs(d[i]-r) + Math.abs(d[i+1]-g) + Math.abs(d[i+2]-b) > 30) ink++;
        }
        return ink / (d.length / 16);
    }"""))


def pick_node(page: Any, name: re.Pattern[str]) -> None:
    """Choose a node from the accessible node list with the keyboard (Tab to it, Enter)."""
    button = page.get_by_role("list", name="Graph nodes").get_by_role("button", name=name).first
    button.focus()
    page.keyboard.press("Enter")


def load_fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / name).read_text()))


SAVED_FILE_READY = "document.getElementById('gradtrace').dataset.ready === '1'"


@dataclass
class SavedFilePage:
    """A saved HTML file opened offline: its page, every URL it requested and its page errors."""

    page: Any
    requests: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextlib.contextmanager
def open_saved_file(browser: Any, path: Path, **context_args: Any) -> Iterator[SavedFilePage]:
    """``path`` (a file ``save_html`` wrote) in a fresh offline context, once its viewer is ready."""
    context = browser.new_context(offline=True, **context_args)
    opened = SavedFilePage(page=None)
    context.on("request", lambda r: opened.requests.append(r.url))
    try:
        opened.page = context.new_page()
        opened.page.on("pageerror", lambda e: opened.errors.append(str(e)))
        opened.page.goto(path.as_uri())
        wait_until(opened.page, SAVED_FILE_READY, timeout=20_000)
        yield opened
    finally:
        context.close()
