"""Step sentences in loops, read as a user would on the three real programs (tests/programs.py):
a repeated op is named by the iteration, call or block the page shows open (analysis/names.js), never
by a running count, at Fit and while stepping, at 1280×800 and 900×700 in Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from browser.pageutil import run_code, settled
from pageguard import wait_until
from programs import ADAM_20, GRU_200, TRANSFORMER_6

pytestmark = pytest.mark.browser

SIZES = [(1280, 800), (900, 700)]


def sentence(page: Any) -> str:
    return str(page.locator("#sentence").inner_text())


def go(page: Any, k: int) -> None:
    """Move to step k - 1 from the timeline, then take one step with → as a person would."""
    page.evaluate(f"window.gradtrace.app.player.go({k - 1}, {{ fromUser: true }})")
    page.locator("#graph").focus()
    page.keyboard.press("ArrowRight")
    wait_until(page, f"window.gradtrace.app.player.k === {k}")
    settled(page)


def open_unit(page: Any) -> int:
    return int(page.evaluate("window.gradtrace.app.viewer.openUnits[0]"))


def steps(page: Any) -> dict[str, int]:
    """The middle forward step (of the middle iteration, in a loop) on a function, and a step
    into the last backward pass."""
    return dict(page.evaluate("""() => { const a = window.gradtrace.app, ev = a.doc.events;
        const fwd = [];
        ev.forEach((e, j) => {
            if (e.phase === 'forward' && a.index.kind[a.timeline.evNode[j]] === 'function') fwd.push(j + 1); });
        const lastPass = Math.max(...ev.filter(e => e.phase === 'backward').map(e => e.pass));
        const lb = ev.findIndex(e => e.phase === 'backward' && e.pass === lastPass);
        return { fwd: fwd[Math.floor(fwd.length / 2)], bwd: lb + 4, N: ev.length }; }"""))


def shoot(page: Any, artifacts_dir: Path, name: str, size: tuple[int, int]) -> None:
    page.screenshot(path=str(artifacts_dir / f"loopwords-{name}-{size[0]}x{size[1]}.png"))


def open_at_fit(page: Any, artifacts_dir: Path, code: str, name: str, size: tuple[int, int]) -> Any:
    """Run ``code`` at this window size, press Fit, take the Fit screenshot; the steps to visit."""
    page.set_viewport_size({"width": size[0], "height": size[1]})
    run_code(page, code)
    page.get_by_role("button", name="Fit").click()
    shoot(page, artifacts_dir, f"{name}-fit", size)
    return steps(page)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_gru_200_sentences_name_the_call_the_picker_shows(playground: Any, artifacts_dir: Path,
                                                           size: tuple[int, int]) -> None:
    page = playground
    at = open_at_fit(page, artifacts_dir, GRU_200, "gru", size)
    for where in ("fwd", "bwd"):
        go(page, at[where])
        text, u = sentence(page), open_unit(page)
        assert not re.search(r"#\d", text), text
        # The node of this step lies in the call the picker shows, and the sentence says which.
        assert f"call {u + 1} of 200" in text, (u, text)
        assert page.get_by_role("spinbutton", name="cell call number").input_value() == str(u + 1)
        shoot(page, artifacts_dir, f"gru-{where}", size)
    assert re.match(r"^(The \d+(st|nd|rd|th) )?\w+Backward0 \(line 7, call \d+ of 200\) receives ∇ = ", text), text


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_adam_20_sentences_name_the_iteration(playground: Any, artifacts_dir: Path, size: tuple[int, int]) -> None:
    page = playground
    at = open_at_fit(page, artifacts_dir, ADAM_20, "adam", size)
    go(page, at["fwd"])
    text, u = sentence(page), open_unit(page)
    assert not re.search(r"#\d", text), text
    assert f"iteration {u + 1} of 20" in text, (u, text)
    shoot(page, artifacts_dir, "adam-fwd", size)
    # The last pass starts (step lb + 1) with the iteration it belongs to.
    go(page, at["bwd"] - 3)
    head = "backward 20 (iteration 20 of 20) starts at line 10 (loss.backward()). "
    assert sentence(page).startswith(head), sentence(page)
    # the quoted line reads as code, not as raw backticks
    assert page.locator("#sentence code").first.inner_text() == "loss.backward()"
    go(page, at["bwd"])
    text = sentence(page)
    assert "iteration 20 of 20" in text and not re.search(r"#\d", text), text
    shoot(page, artifacts_dir, "adam-bwd", size)
    # 40 phase segments of a few pixels: none shows a clipped stub ("f…", "b…"); each keeps its
    # name as its title and accessible name.
    segs = page.evaluate("""() => [...document.querySelectorAll('#tl-segments .tl-seg')].map(el =>
        ({ title: el.title, width: el.clientWidth, shown: getComputedStyle(el).color !== 'rgba(0, 0, 0, 0)' }))""")
    assert len(segs) == 40
    assert all(s["width"] < 30 and not s["shown"] for s in segs), segs
    assert all(re.match(r"^(forward|backward \d+): steps \d+–\d+$", s["title"]) for s in segs), segs


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_transformer_6_sentences_name_the_layer(playground: Any, artifacts_dir: Path, size: tuple[int, int]) -> None:
    page = playground
    at = open_at_fit(page, artifacts_dir, TRANSFORMER_6, "transformer", size)
    for where in ("fwd", "bwd"):
        go(page, at[where])
        text, u = sentence(page), open_unit(page)
        assert not re.search(r"#\d", text), text
        assert f"enc.layers.{u}" in text, (u, text)
        shoot(page, artifacts_dir, f"transformer-{where}", size)
