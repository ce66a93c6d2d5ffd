"""The timeline: stepping with keys and buttons, the highlighted code line and node at each
step, gradient values during backward, and .grad growing across passes. The run document the
page received (PyTorch's own record, via capture) is the oracle for every expected value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from browser.pageutil import node_texts, pick_node, run_example
from pageguard import wait_until

pytestmark = pytest.mark.browser


def _node(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(n for n in doc["graph"]["nodes"] if n["id"] == node_id)


def _current(page: Any) -> Any:
    return page.locator('#node-list button[aria-current="step"]')


def test_keys_step_through_events_highlighting_node_and_code_line(playground: Any,
                                                                  artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "chain_rule")
    events = doc["events"]
    code_lines = doc["code"].split("\n")
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    expect(page.locator("#tl-label")).to_have_text(f"Step 0/{len(events)} · start")
    expect(_current(page)).to_have_count(0)
    for k in (1, 2, 3):
        page.keyboard.press("ArrowRight")
        ev = events[k - 1]
        expect(page.locator("#tl-label")).to_have_text(f"Step {k}/{len(events)} · forward")
        expect(_current(page)).to_have_count(1)
        expect(_current(page)).to_have_text(re.compile("^" + re.escape(_node(doc, ev["node"])["name"]) + " — "))
        expect(page.locator(".cm-line.gt-line-current")).to_have_text(code_lines[ev["line"] - 1])
        expect(page.locator(".gt-mark-current")).to_have_count(1)
    expect(page.locator(".cm-line.gt-line-done")).to_have_text(code_lines[events[1]["line"] - 1])
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#tl-label")).to_have_text(f"Step 2/{len(events)} · forward")
    page.screenshot(path=str(artifacts_dir / "timeline-forward-step.png"))
    page.keyboard.press("End")
    # Passes count from 1 on the page (frontend/src/analysis/format.js passNo).
    expect(page.locator("#tl-label")).to_have_text(f"Step {len(events)}/{len(events)} · backward 1")
    page.keyboard.press("Shift+ArrowLeft")  # start of the backward phase
    first_backward = next(i for i, e in enumerate(events) if e["phase"] == "backward")
    expect(page.locator("#tl-label")).to_contain_text(f"Step {first_backward}/{len(events)}")


def test_space_plays_and_pauses_and_step_buttons_work(playground: Any) -> None:
    page = playground
    doc = run_example(page, "loop")
    n = len(doc["events"])
    page.get_by_role("button", name="Step back").click()
    expect(page.locator("#tl-label")).to_contain_text(f"Step {n - 1}/{n}")
    page.get_by_role("button", name="Step forward").click()
    expect(page.locator("#tl-label")).to_contain_text(f"Step {n}/{n}")
    expect(page.get_by_role("button", name="Step forward")).to_be_disabled()
    page.get_by_label("Speed").select_option("4")
    page.locator("#graph").focus()
    page.keyboard.press("Space")  # at the end, play restarts from the start
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    wait_until(page, "window.gradtrace.app.player.k >= 3")
    page.keyboard.press("Space")
    expect(page.get_by_role("button", name="Play")).to_be_visible()
    k = page.evaluate("window.gradtrace.app.player.k")
    page.wait_for_timeout(300)
    assert page.evaluate("window.gradtrace.app.player.k") == k, "playback continued after pause"
    assert 3 <= k <= n


def test_arrow_keys_in_the_editor_move_the_cursor_not_the_timeline(playground: Any) -> None:
    page = playground
    doc = run_example(page, "chain_rule")
    n = len(doc["events"])
    page.locator(".cm-content").click()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Home")
    expect(page.locator("#tl-label")).to_contain_text(f"Step {n}/{n}")


def test_backward_steps_show_gradients_on_edges_nodes_and_inspector(playground: Any,
                                                                    artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "chain_rule")
    events = doc["events"]
    acc_step = next(i + 1 for i, e in enumerate(events)
                    if e["phase"] == "backward" and _node(doc, e["node"])["name"] == "AccumulateGrad")
    x_grad = events[acc_step - 1]["grad"]["values"]
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(acc_step - 1):
        page.keyboard.press("ArrowRight")
    x_item = page.get_by_role("list", name="Graph nodes").locator("li", has_text=re.compile("^x — "))
    expect(x_item).not_to_contain_text(", grad ")  # before AccumulateGrad ran, x has no .grad
    page.keyboard.press("ArrowRight")
    expect(x_item).to_have_text(re.compile(rf"grad {x_grad:g}(\.0*)?$"))
    page.screenshot(path=str(artifacts_dir / "timeline-backward-accumulate.png"))

    # The inspector shows what flowed through the first backward node at this step.
    first = events[next(i for i, e in enumerate(events) if e["phase"] == "backward")]
    node = _node(doc, first["node"])
    pick_node(page, re.compile("^" + node["name"]))
    inspector = page.locator("#inspector")
    expect(inspector.locator("h3")).to_have_text(node["name"])
    expect(inspector).to_contain_text("grad_inputs[0] (flowing out)")
    expect(inspector).to_contain_text("grad_outputs[0] (flowing in)")
    page.screenshot(path=str(artifacts_dir / "timeline-backward-inspector.png"))
    # The gradients drawn on an edge at the current step are the ones the document recorded
    # (a merged edge shows their sum, and each part on hover: tested in frontend/test/scene.test.js).
    drawn = page.evaluate("""() => {
        const app = window.gradtrace.app, st = app.canvas.stepState();
        return app.scene.view.vedges.map((e, i) => st.edgeGrad(i)).filter(Boolean)
            .flatMap(g => g.all.map(t => t.values));
    }""")
    recorded = [g["values"] for e in events[:acc_step] if e["phase"] == "backward"
                for g in (e.get("grad_inputs") or []) if g]
    assert drawn and all(v in [*recorded, x_grad] for v in drawn)


def test_grad_grows_across_backward_passes(playground: Any) -> None:
    page = playground
    doc = run_example(page, "accumulating_grads")
    leaf = next(n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["name"] == "w")
    history = [h["values"] for h in leaf["grad_history"]]
    assert len(history) == 3
    events = doc["events"]
    ends = [(i + 1, e) for i, e in enumerate(events)
            if i + 1 == len(events) or (events[i + 1]["phase"], events[i + 1].get("pass"))
            != (e["phase"], e.get("pass"))]
    labels = page.locator("#tl-segments button").all_inner_texts()
    assert [lab for lab in labels if lab.startswith("backward")] == ["backward 1", "backward 2", "backward 3"]
    w_item = page.get_by_role("list", name="Graph nodes").locator("li", has_text=re.compile("^w — "))
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    for end, ev in ends:
        page.keyboard.press("Shift+ArrowRight")  # to the end of the next phase
        phase = "forward" if ev["phase"] == "forward" else f"backward {ev['pass'] + 1}"
        expect(page.locator("#tl-label")).to_have_text(f"Step {end}/{len(events)} · {phase}")
        if ev["phase"] == "backward":
            expected = history[ev["pass"]]
            # After the value, a finding about the node may follow (ui/findings.js statusWithFindings).
            expect(w_item).to_have_text(re.compile(rf", grad {expected:g}(\.0*)?( — .*)?$"))


def test_clicking_a_code_line_selects_the_nodes_it_created(playground: Any) -> None:
    page = playground
    doc = run_example(page, "chain_rule")
    line = 5  # a = x * x
    created = sorted(n["name"] for n in doc["graph"]["nodes"]
                     if n["line"] == line and n["kind"] == "function")
    assert created
    page.locator(".cm-line").nth(line - 1).click()
    inspector = page.locator("#inspector")
    expect(inspector.locator("h3")).to_have_text(f"Line {line}")
    shown = sorted(t for t in inspector.locator(".gt-line-nodes button").all_inner_texts())
    assert [s for s in shown if s in created] == created
    assert page.evaluate("window.gradtrace.app.canvas.lineSel.size") >= len(created)
    assert len(node_texts(page)) == len(doc["graph"]["nodes"])


def test_inspector_shows_leaf_grad_and_saved_tensors_freed_by_backward(playground: Any,
                                                                        artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "mlp_loss")
    inspector = page.locator("#inspector")
    weight = next(n for n in doc["graph"]["nodes"] if n["name"] == "model.0.weight")
    pick_node(page, re.compile(r"^model\.0\.weight — "))
    expect(inspector.locator("h3")).to_have_text("model.0.weight")
    expect(inspector).to_contain_text(".grad at this step (after 1 accumulation)")
    expect(inspector).to_contain_text(f"norm {weight['grad']['stats']['norm']:.4g}")
    page.locator("#graph").focus()  # the keyboard node list hides again; the inspector stays
    page.screenshot(path=str(artifacts_dir / "inspector-leaf-grad.png"))

    names = [n["name"] for n in doc["graph"]["nodes"]]
    unique = [n for n in doc["graph"]["nodes"] if names.count(n["name"]) == 1]
    saver = max(unique, key=lambda n: n.get("saved_bytes", 0))
    assert saver["saved"], "capture recorded no saved tensor"
    first = saver["saved"][0]
    pick_node(page, re.compile("^" + re.escape(saver["name"]) + " — "))
    table = inspector.locator("table.gt-saved")
    expect(table.locator("caption")).to_contain_text(f"{saver['saved_bytes']} B")
    row = table.locator("tr", has_text=first["name"]).first
    freed = first["freed_after_pass"]
    # The page numbers passes from 1 (frontend/src/analysis/format.js passNo); the document from 0.
    expect(row).to_contain_text(f"freed after pass {freed + 1}" if freed is not None else "held")
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    expect(row).to_contain_text("held")  # at step 0 the backward pass has not run yet
