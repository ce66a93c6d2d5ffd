"""The compare page /c/{a}..{b} in Chromium: two panes stepped together, the jump to the first
divergence, and the what-if slider on lesson 01's ``x``; screenshots under tests/artifacts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx

from conftest import Server, lesson_code
from gradcheck.cube import IN_A_CHAIN, RIGHT_FACTOR, WRONG_FACTOR, cube
from pageguard import wait_until
from programs import UNSEEDED_MLP as MLP

READY_MS = 60_000
CUSTOM = cube("2 * ", IN_A_CHAIN)


def _link(server: Server, code_a: str, code_b: str, seed_b: int = 0) -> str:
    with server.client() as api:
        a = api.post("/api/runs", json={"code": code_a, "seed": 0}).json()
        b = api.post("/api/runs", json={"code": code_b, "seed": seed_b}).json()
        r = api.post("/api/compare/links", json={"a": {"run_id": a["id"]}, "b": {"run_id": b["id"]}})
        assert r.status_code == 201, r.text
        return str(httpx.URL(r.json()["url"]).path)


def _open(page: Any, server: Server, path: str) -> None:
    page.goto(server.url + path)
    wait_until(page, "document.body.dataset.ready === '1'", timeout=READY_MS)


def _steps(page: Any) -> dict[str, int]:
    return dict(page.evaluate("""() => { const p = window.gradtrace.page;
        return {cursor: p.cursor, a: p.panes.a.player.k, b: p.panes.b.player.k,
                wantA: p.table.a[p.cursor], wantB: p.table.b[p.cursor]}; }"""))


def test_two_panes_step_together_through_an_inserted_node(page: Any, live_server: Server,
                                                          frontend_bundle: Path, artifacts_dir: Path) -> None:
    path = _link(live_server, MLP, MLP.replace("h = l2(h)\n", "h = l2(h)\nh = h.relu()\n"))
    _open(page, live_server, path)
    summary = page.locator("#summary").inner_text()
    assert "1 only in B" in summary and "ReluBackward0" in summary
    page.locator("#pane-a").click()
    for k in range(1, 13):
        page.get_by_role("button", name="Step forward").click()
        s = _steps(page)
        assert s["cursor"] == k and s["a"] == s["wantA"] and s["b"] == s["wantB"], s
    # the step where only B has an event: A waits, B moves on
    alone = page.evaluate("window.gradtrace.page.cmp.steps.findIndex(([a, b]) => a === null) + 1")
    page.evaluate(f"window.gradtrace.page.go({alone} - 1)")
    before = _steps(page)
    page.get_by_role("button", name="Step forward").click()
    after = _steps(page)
    assert after["a"] == before["a"] and after["b"] == before["b"] + 1
    assert "only B has" in page.locator("#c-where").inner_text()
    # the paired nodes are selected on both sides: the same op
    names = page.evaluate("""() => { const p = window.gradtrace.page;
        return [p.panes.a.selectedId(), p.panes.b.selectedId()]; }""")
    assert names[1] is not None
    page.screenshot(path=str(artifacts_dir / "compare-stepped-together.png"))
    assert page.page_errors == []


def test_the_wrap_button_covers_no_code_in_either_pane(page: Any, live_server: Server, frontend_bundle: Path,
                                                     artifacts_dir: Path) -> None:
    _open(page, live_server, _link(live_server, MLP, MLP, seed_b=1))
    for side in ("a", "b"):
        boxes = page.evaluate("""(side) => { const s = document.getElementById(`pane-${side}`).shadowRoot;
            const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
            const line = s.querySelector('.cm-line'), text = document.createRange();
            text.selectNodeContents(line);
            const r = text.getBoundingClientRect();
            return {wrap: box(s.getElementById('wrap')), text: [r.left, r.top, r.right, r.bottom],
                    first: line.textContent}; }""", side)
        wrap, text = boxes["wrap"], boxes["text"]
        assert boxes["first"] == "import torch"
        overlap = wrap[0] < text[2] and text[0] < wrap[2] and wrap[1] < text[3] and text[1] < wrap[3]
        assert not overlap, boxes
        page.locator(f"#pane-{side}").screenshot(path=str(artifacts_dir / f"compare-wrap-{side}.png"))
    # the button still wraps the code
    page.locator("#pane-a").get_by_role("button", name="Wrap").click()
    assert page.locator("#pane-a").get_by_role("button", name="Wrap").get_attribute("aria-pressed") == "true"
    assert page.page_errors == []


def test_jump_to_the_first_divergence_of_a_fixed_backward(page: Any, live_server: Server,
                                                         frontend_bundle: Path, artifacts_dir: Path) -> None:
    path = _link(live_server, CUSTOM, CUSTOM.replace(WRONG_FACTOR, RIGHT_FACTOR))
    _open(page, live_server, path)
    page.get_by_role("button", name="Jump to first divergence").click()
    got = page.evaluate("""() => { const p = window.gradtrace.page, d = p.cmp.first_divergence;
        return {d, cursor: p.cursor, at: p.divergeAt, a: p.panes.a.selectedId(), b: p.panes.b.selectedId(),
                stepA: p.panes.a.player.k}; }""")
    d = got["d"]
    assert d["phase"] == "backward" and d["name"] == "CubeBackward"
    assert got["cursor"] == got["at"] > 0 and got["stepA"] == d["a_event"] + 1
    assert got["a"] == d["a"] and got["b"] == d["b"]
    assert "the gradient produced by CubeBackward" in page.locator("#c-where").inner_text()
    page.screenshot(path=str(artifacts_dir / "compare-first-divergence.png"))
    assert page.page_errors == []


def test_what_if_slider_on_lesson_01_x(page: Any, live_server: Server, frontend_bundle: Path,
                                       artifacts_dir: Path) -> None:
    code = lesson_code("01_chain_rule")
    _open(page, live_server, _link(live_server, code, code))
    assert "No value or gradient differs" in page.locator("#summary").inner_text()
    assert page.locator("#wi-pick option").first.inner_text().startswith("x (line")
    page.evaluate("window.gradtrace.page.go(window.gradtrace.page.cmp.steps.length)")
    slider = page.locator("#wi-slider")
    slider.focus()
    for _ in range(5):  # 2.0 → 2.5: each key is an input and a change (a release)
        page.keyboard.press("ArrowRight")
    wait_until(page, "window.gradtrace.page.whatIf.lastMs !== null && !window.gradtrace.page.whatIf.busy"
                           " && window.gradtrace.page.whatIf.pending === null", timeout=READY_MS)
    x_grad = page.evaluate("""() => { const p = window.gradtrace.page;
        const leaf = p.docs.b.graph.nodes.find((n) => n.name === 'x');
        const pair = p.cmp.pairs.find((q) => q.name === 'x');
        return {grad: leaf.grad.values, delta: pair.grad, code: p.docs.b.code}; }""")
    assert "torch.tensor(2.5" in x_grad["code"]
    assert abs(x_grad["grad"] - 8.0) < 1e-5  # dy/dx = 2x + 3 at x = 2.5
    assert x_grad["delta"]["beyond_tolerance"] and abs(x_grad["delta"]["max_abs"] - 1.0) < 1e-5
    assert "First divergence" in page.locator("#summary").inner_text()
    page.screenshot(path=str(artifacts_dir / "compare-what-if.png"))
    assert page.page_errors == []


def test_the_playgrounds_compare_button_opens_the_run_against_itself(playground: Any, live_server: Server) -> None:
    from browser.pageutil import run_example

    doc = run_example(playground, "chain_rule")
    playground.get_by_role("button", name="Compare", exact=True).click()
    playground.wait_for_url(f"{live_server.url}/c/*..*", timeout=READY_MS)
    wait_until(playground, "document.body.dataset.ready === '1'", timeout=READY_MS)
    got = playground.evaluate("[window.gradtrace.page.cmp.a.id, window.gradtrace.page.cmp.b.id]")
    assert got == [doc["id"], doc["id"]]
    assert "Same graph" in playground.locator("#summary").inner_text()


def test_checkpointing_compared_and_no_serious_axe_violations(page: Any, live_server: Server, frontend_bundle: Path,
                                                              artifacts_dir: Path) -> None:
    from browser.test_words_a11y import axe_violations

    code = lesson_code("12_checkpoint_memory")
    _open(page, live_server, _link(live_server, code, code.replace("checkpoint(block, h, use_reentrant=False)",
                                                                   "block(h)")))
    assert page.get_by_role("button", name="checkpointing off").is_visible()
    assert page.locator("#preset-cuda").is_hidden()  # the test server has no GPU
    label = page.locator("#c-memory-label").inner_text()
    recomputed = re.search(r"recomputed in backward: (\d+) ops in A, 0 in B", label)
    assert recomputed and int(recomputed.group(1)) > 0, label
    # clicking the memory strip where B (no checkpointing) peaks reaches that step's node (paired
    # one to one here, so B's step is the cursor)
    peak = page.evaluate("window.gradtrace.page.cmp.memory_b.peak_step")
    box = page.locator("#c-memory").bounding_box()
    n = page.evaluate("window.gradtrace.page.cmp.steps.length")
    page.mouse.click(box["x"] + box["width"] * peak / n, box["y"] + box["height"] / 2)
    got = page.evaluate("[window.gradtrace.page.cursor, window.gradtrace.page.panes.b.selectedId()]")
    assert abs(got[0] - peak) <= 1 and got[1] is not None
    page.screenshot(path=str(artifacts_dir / "compare-checkpointing.png"))
    found = axe_violations(page)
    assert found == [], found


def test_each_graph_gets_most_of_its_pane_at_1280x800(playground: Any, live_server: Server) -> None:
    """Two panes share 1280 px: the code column and the inspector row stay small, so each graph is
    about 500 × 310 px, not 430 × 240."""
    from browser.pageutil import run_example

    run_example(playground, "chain_rule")
    playground.get_by_role("button", name="Compare", exact=True).click()
    playground.wait_for_url(f"{live_server.url}/c/*..*", timeout=READY_MS)
    wait_until(playground, "document.body.dataset.ready === '1'", timeout=READY_MS)
    sizes = playground.evaluate("""() => [...document.querySelectorAll('.gt-pane-host')].map((h) => {
        const g = h.shadowRoot.querySelector('#graph').getBoundingClientRect(); return [g.width, g.height]; })""")
    assert len(sizes) == 2 and all(w >= 480 and h >= 290 for w, h in sizes), sizes


SELF_SEEDED = "import torch\ntorch.manual_seed(3)\nw = torch.randn(3, requires_grad=True)\n(w * w).sum().backward()\n"


def test_another_seed_on_a_self_seeded_snippet_says_so_and_varies_the_seed_in_the_code(
        page: Any, live_server: Server, frontend_bundle: Path, artifacts_dir: Path) -> None:
    path = _link(live_server, SELF_SEEDED, SELF_SEEDED)
    _open(page, live_server, path)
    note = page.locator('[data-gt="self-seeded"]')
    assert "torch.manual_seed(3), line 2" in note.inner_text()
    button = page.locator("#preset-seed")
    assert button.inner_text() == "another seed (in the code)"
    assert "the seed (torch.manual_seed, line 2)" in page.locator("#wi-pick").inner_text()  # the what-if slider too
    page.screenshot(path=str(artifacts_dir / "compare-self-seeded.png"))
    button.click()
    page.wait_for_url(re.compile(r".*/c/.*\.\..*"), timeout=READY_MS)
    wait_until(page, "document.body.dataset.ready === '1' && window.gradtrace.page.cmp.b.id !== "
                           "window.gradtrace.page.cmp.a.id", timeout=READY_MS)
    code_b = page.evaluate("window.gradtrace.page.docs.b.code")
    assert "torch.manual_seed(4)" in code_b
    assert "No value or gradient differs" not in page.locator("#summary").inner_text()
