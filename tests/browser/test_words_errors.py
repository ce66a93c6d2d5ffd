"""Errors where they happened, and the higher-order pass named, as a user sees them in the page:
the in-place hazard (lesson 08), a shape error inside ``nn.Sequential``, double backward (lesson 13)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from browser.pageutil import pick_node, run_code, run_example
from gradtrace.lessons import lesson

SEQUENTIAL_SHAPE_ERROR = """import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(5, 2))
out = model(torch.randn(3, 4))
"""


def line_of(key: str, text: str) -> int:
    """The 1-based line of lesson `key`'s code that holds `text` (the first such line)."""
    return next(i for i, line in enumerate(lesson(key).code.splitlines(), 1) if text in line)


def error_marks(page: Any) -> list[dict[str, Any]]:
    """The nodes the canvas marks as concerned by the error, with the text drawn next to each."""
    return list(page.evaluate("""() => { const s = window.gradtrace.app.scene;
        return s.errorV.map(v => ({ v, label: s.view.vnodes[v].label,
                                    text: s.errorLabels ? s.errorLabels.get(v) : null })); }"""))


def gutter_marks(page: Any, cls: str) -> list[int]:
    """Line numbers of the code lines whose gutter carries mark `cls` (gt-mark-error, gt-mark-cause)."""
    return list(page.evaluate(f"""() => {{
        const view = document.querySelector('.cm-editor');
        const lines = [...view.querySelectorAll('.cm-line')];
        const gut = [...view.querySelectorAll('.gt-gutter .cm-gutterElement')];
        const marks = gut.filter(g => g.querySelector('.{cls}'));
        return marks.map(g => {{
            const top = g.getBoundingClientRect().top;
            const i = lines.findIndex(l => Math.abs(l.getBoundingClientRect().top - top) < 4);
            return i + 1;
        }});
    }}"""))


def test_inplace_error_marks_the_changer_the_saver_and_both_versions(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "inplace_hazard")
    err = doc["error"]
    changed = line_of("inplace_hazard", "y.add_(1)")
    assert err["type"] == "RuntimeError" and err["inplace_line"] == changed
    assert err["line"] == line_of("inplace_hazard", ".backward()")
    # The results panel explains it in the API's words, with a link to the line that changed the tensor.
    explain = page.locator("#error-box .gt-error-explain")
    text = explain.inner_text()
    assert err["detail"][:40].lower() in text.lower(), text
    assert "It was saved at version 0 and is now at version 1." in text, text
    assert explain.get_by_role("button", name=f"(changed in place at line {changed})").is_visible()
    # The code shows both lines: where backward raised and where the tensor was changed.
    assert gutter_marks(page, "gt-mark-error") == [err["line"]]
    assert gutter_marks(page, "gt-mark-cause") == [changed]
    # The graph marks the node whose saved tensor it was and the op that changed it.
    marks = {m["label"]: m["text"] for m in error_marks(page)}
    assert set(marks) == {"ExpBackward0", "AddBackward0"}, marks
    assert marks["ExpBackward0"] == "⚠ saved 'result' changed (v0 → v1)"
    assert marks["AddBackward0"] == f"✎ add_ changed it (line {changed})"
    page.screenshot(path=str(artifacts_dir / "words-inplace-end.png"))
    # The inspector says how the saved tensor changed (where and from which version), not "held".
    pick_node(page, re.compile("^ExpBackward0"))
    saved = page.locator("#inspector .gt-saved")
    row = saved.locator("tr", has_text="result")
    state = row.locator("td").last.inner_text()
    assert state != "held" and f"changed in place at line {changed}" in state and "version 0" in state, state
    # Stepping back through the run, the sentence under the timeline says what each step did.
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    # the node is named by its op and the variable the snippet bound it to (docs/CONTRACT.md `var`)
    assert "ExpBackward0 → y is created from x" in page.locator("#sentence").inner_text()
    page.screenshot(path=str(artifacts_dir / "words-inplace-step2.png"))


def test_shape_error_in_sequential_marks_the_module_and_the_shapes(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, SEQUENTIAL_SHAPE_ERROR)
    doc = page.evaluate("window.gradtrace.app.doc")
    err = doc["error"]
    assert err["type"] == "RuntimeError" and err["line"] == 5
    explain = page.locator("#error-box .gt-error-explain").inner_text()
    # The module and op that raised and the shapes it got, as the recorder wrote them.
    assert (err["module"], err["module_type"], err["op"]) == ("model.2", "Linear", "linear"), err
    assert [3, 8] in err["shapes"], err
    shapes = " and ".join(f"[{', '.join(map(str, s))}]" for s in err["shapes"])
    assert explain == f"Raised at line 5 by linear in model.2 (Linear) with inputs of shape {shapes}.", explain
    # the box prints the error's message once: the sentence under it adds where, not the message again
    assert page.locator("#error-box").inner_text().count(err["message"]) == 1
    marks = error_marks(page)
    assert len(marks) == 1, marks
    assert marks[0]["text"].startswith("⚠ model.2 (Linear) raised next: got [3, 8]"), marks
    # The mark sits on the last node made before the error: the ReLU's output went into Linear 2.
    assert marks[0]["label"] == "ReluBackward0", marks
    # Nothing is cut off: the error box wraps inside its panel.
    box = page.locator("#error-box")
    assert page.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1", box.element_handle())
    page.screenshot(path=str(artifacts_dir / "words-shape-error.png"))


def test_double_backward_names_the_pass_that_builds_a_graph(playground: Any) -> None:
    page = playground
    doc = run_example(page, "double_backward")
    assert doc["passes"][0]["create_graph"] is True
    segs = page.locator("#tl-segments .tl-seg").all_inner_texts()
    assert segs[0] == "forward"
    assert "forward" not in segs[1:], segs
    # One segment per pass, numbered from 1 (graph/timeline.js NOTE [one segment per pass]).
    assert segs == ["forward", "backward 1 (building a graph)", "backward 2"], segs
    # A step that builds a node of the second graph says so.
    made_in_pass = {n["id"]: n.get("created_in_pass") for n in doc["graph"]["nodes"]}
    built = [i for i, e in enumerate(doc["events"]) if e["phase"] == "forward" and made_in_pass[e["node"]] == 0]
    assert built
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(built[0] + 1):
        page.keyboard.press("ArrowRight")
    assert page.locator("#tl-label").inner_text().endswith("backward 1 (building a graph)")
    assert page.locator("#sentence").inner_text().endswith("during backward 1 (building a graph).")


def test_svg_export_holds_the_error_marks_and_gradients_the_png_shows(playground: Any, tmp_path: Path) -> None:
    page = playground
    run_example(page, "inplace_hazard")
    page.locator("#graph").focus()
    page.keyboard.press("End")
    page.get_by_text("Export", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("button", name="View as SVG").click()
    path = tmp_path / info.value.suggested_filename
    info.value.save_as(path)
    svg = ET.fromstring(path.read_bytes())
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text or "" for t in svg.iter(ns + "text")]
    # The error marks with their words, as on the canvas.
    assert "⚠ saved 'result' changed (v0 → v1)" in texts, texts
    assert any(t.startswith("✎ add_ changed it") for t in texts), texts
    # The backward pass's gradients: coloured, labelled edges and arrowheads, as the PNG draws them.
    grads = svg.findall(f".//{ns}path[@class='edge grad']")
    assert grads and all(g.get("stroke") != "none" for g in grads)
    assert any(t.startswith("∇ [1, 1]") for t in texts), texts
    assert svg.find(f".//{ns}marker") is not None
    assert len(svg.findall(f".//{ns}rect[@class='ring']")) >= 2  # error rings (and the current step)
