"""Exercises and predict mode in Chromium: a lesson's exercise fails, then passes after an edit;
predict mode is taken through a backward pass by keyboard alone; a teacher's share link opens
with its questions; a saved HTML file plays both from file://."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from browser.pageutil import open_saved_file, run_code, run_example, set_code
from gradtrace.lessons import lesson
from pageguard import wait_until

pytestmark = pytest.mark.browser


def _open_exercise(page: Any, key: str) -> None:
    page.get_by_text("Exercises", exact=True).click()
    page.locator(f"[data-exercise={key}]").click()
    expect(page.locator("#exercise-task")).to_contain_text(lesson(key).exercise.task)  # type: ignore[union-attr]


def test_an_exercise_fails_then_passes_after_an_edit(playground: Any, artifacts_dir: Path, tmp_path: Path) -> None:
    page = playground
    item = lesson("loop")
    assert item.exercise is not None
    _open_exercise(page, "loop")
    run_code(page)
    goals = page.locator("#goals")
    expect(goals).to_be_visible()
    expect(page.locator("#goals-status")).to_have_text("0 of 2 goals pass.")
    failing = page.locator(".gt-goal-fail")
    expect(failing).to_have_count(2)
    expect(failing.first).to_contain_text("x.grad is 16")
    # a failing goal points at its line: the button selects it in the code
    failing.nth(1).get_by_role("button", name=re.compile(r"^line \d+$")).click()
    page.screenshot(path=str(artifacts_dir / "exercise-03-fails.png"))
    # the edit: five doublings instead of four
    set_code(page, item.exercise.start.replace("range(4)", "range(5)"))
    run_code(page)
    expect(page.locator("#goals-status")).to_have_text("Exercise done: all 2 goals pass.")
    expect(page.locator(".gt-goal-pass")).to_have_count(2)
    progress = page.evaluate("JSON.parse(localStorage.getItem('gradtrace.exercises'))")
    assert progress["03_loop"]["done"] is True
    page.get_by_text("Exercises", exact=True).click()
    expect(page.locator("[data-gt=exercise-progress]")).to_contain_text("1 of 15 exercises done")
    page.screenshot(path=str(artifacts_dir / "exercise-03-done.png"))
    # a share keeps the checked goals
    page.get_by_role("button", name="Share").click()
    expect(page.locator("#share-url")).to_have_value(re.compile(r"/s/"))
    shared = page.context.new_page()
    shared.goto(page.locator("#share-url").input_value())
    expect(shared.locator("#goals-status")).to_have_text("Exercise done: all 2 goals pass.")
    shared.close()
    page.get_by_role("button", name="Close").click()
    # progress leaves the browser as a file and comes back from it
    with page.expect_download() as info:
        page.get_by_role("button", name="Export progress").click()
    saved = tmp_path / "progress.json"
    info.value.save_as(saved)
    page.evaluate("localStorage.removeItem('gradtrace.exercises')")
    page.get_by_label("Import progress from a file").set_input_files(str(saved))
    expect(page.locator("[data-gt=exercise-progress]")).to_contain_text("1 of 15 exercises done")
    expect(page.locator("[data-gt=exercise-io-status]")).to_contain_text("Imported 1 exercises' progress")
    # the reference solution stays behind its button
    expect(page.locator("#exercise-solution-text")).to_be_hidden()
    page.get_by_role("button", name="Show solution").click()
    expect(page.locator("#exercise-solution-text")).to_contain_text("range(5)")


def _truth(page: Any) -> str:
    return str(page.evaluate("""() => { const q = window.gradtrace.app.viewer.panels.predict.current();
        return q.kind === 'sign' ? (q.truth > 0 ? '+' : '-') : q.kind === 'none' ? String(q.truth[0])
             : q.kind === 'shape' ? '[' + q.truth.join(', ') + ']' : String(q.truth); }"""))


def test_predict_mode_through_a_backward_pass_by_keyboard_alone(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "chain_rule")
    toggle = page.locator("#predict-toggle")
    toggle.focus()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("document.activeElement.id") == "predict-next"  # turning it on moves there
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "predict-answer"
    asked = int(page.evaluate("window.gradtrace.app.viewer.panels.predict.questions.size"))
    assert asked >= 3
    feedback = page.locator("#predict-feedback")
    expect(page.locator("#inspector")).to_have_class(re.compile("gt-predict-hidden"))
    # not a number: asked again, not counted
    page.keyboard.type("seven")
    page.keyboard.press("Enter")
    expect(feedback).to_contain_text("not counted")
    # wrong: "not quite" and the local rule without its numbers
    page.keyboard.press("Control+a")
    truth = _truth(page)
    page.keyboard.type("+" if truth.startswith("-") else "-12345")
    page.keyboard.press("Enter")
    expect(feedback).to_contain_text("Not quite")
    expect(page.locator("#predict-rule code").first).to_be_visible()
    expect(page.locator("#predict-rule .gt-explain-instance")).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "predict-not-quite.png"))
    for k in range(asked):
        if k:
            assert page.evaluate("document.activeElement.id") == "predict-next"
            page.keyboard.press("Enter")
        page.keyboard.press("Control+a")
        page.keyboard.type(_truth(page))
        page.keyboard.press("Enter")
        expect(feedback).to_contain_text("Right")
        expect(page.locator("#inspector")).not_to_have_class(re.compile("gt-predict-hidden"))
    expect(feedback).to_contain_text(f"All {asked} questions answered: {asked - 1} right at the first try")
    expect(page.locator("#predict-rule .gt-explain-instance").first).to_be_visible()
    page.screenshot(path=str(artifacts_dir / "predict-done.png"))
    stored = page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('gradtrace.predict.'))")
    assert len(stored) == 1


def test_a_teachers_share_link_opens_with_its_questions(playground: Any, browser: Any, artifacts_dir: Path) -> None:
    page = playground
    doc = run_example(page, "mlp_loss")
    page.locator("#predict-toggle").click()
    page.evaluate("""() => { const app = window.gradtrace.app, nodes = app.index.nodes;
        const v = app.scene.view.vnodes.findIndex(n => n.refs && nodes[n.refs[0]].name === 'AddmmBackward0');
        app.viewer.selectNode(v); }""")
    page.get_by_text("What to ask", exact=True).click()
    page.locator("#predict-scope").select_option("line")
    line = page.evaluate("window.gradtrace.app.viewer.panels.predict.spec.line")
    assert isinstance(line, int)
    page.get_by_role("button", name="Share").click()
    expect(page.locator("#share-url")).to_have_value(re.compile(r"/s/"))
    url = page.locator("#share-url").input_value()
    assert f"predict=line%3A{line}" in url or f"predict=line:{line}" in url, url
    learner = browser.new_page()
    errors: list[str] = []
    learner.on("pageerror", lambda e: errors.append(str(e)))
    learner.goto(url)
    wait_until(learner, "Number(document.body.dataset.ready || 0) > 0")
    expect(learner.locator("#predict-toggle")).to_have_attribute("aria-pressed", "true")
    asked = learner.evaluate("window.gradtrace.app.viewer.panels.predict.questions.size")
    lines = learner.evaluate("[...window.gradtrace.app.viewer.panels.predict.questions.values()].map(q => q.line)")
    assert asked >= 1 and set(lines) == {line}, lines
    expect(learner.locator("#predict-score")).to_have_text(f"0/{asked} answered · 0 right first try")
    learner.locator("#predict-next").click()
    expect(learner.locator("#predict-prompt")).to_contain_text(f"line {line}")
    learner.screenshot(path=str(artifacts_dir / "predict-teacher-link.png"))
    assert errors == [] and doc["id"]
    learner.close()


def test_the_saved_html_plays_an_exercise_and_predict_mode_from_file(live_server: Any, browser: Any,
                                                                    tmp_path: Path, artifacts_dir: Path) -> None:
    from gradtrace.notebook.html import save_html

    item = lesson("finite_difference_check")
    assert item.exercise is not None
    with httpx.Client(base_url=live_server.url, timeout=120) as api:
        doc = api.post("/api/runs", json={"code": item.exercise.start, "exercise": item.id}).json()
    assert doc["goals"]["done"] is False
    path = save_html(doc, tmp_path / "exercise.html")
    with open_saved_file(browser, path) as saved:
        page = saved.page
        root = page.locator("#gradtrace")
        status = root.locator("[data-gt=goals-status]")
        expect(status).to_have_text("0 of 2 goals pass.")
        gradcheck = root.locator(".gt-goal").first
        expect(gradcheck).to_contain_text("gradient check passes on Cube: fails")
        expect(gradcheck).to_contain_text("needs the gradtrace service")
        root.locator("[data-gt=predict-toggle]").click()
        root.locator("[data-gt=predict-next]").click()
        answer = root.locator("[data-gt=predict-answer]")
        expect(answer).to_be_focused()
        truth = page.evaluate("""() => { const q = window.gradtrace.viewer.viewer.panels.predict.current();
            return q.kind === 'sign' ? (q.truth > 0 ? '+' : '-')
                 : String(q.kind === 'none' ? q.truth[0] : q.truth); }""")
        answer.fill(str(truth))
        answer.press("Enter")
        expect(root.locator("[data-gt=predict-feedback]")).to_contain_text("Right")
        page.screenshot(path=str(artifacts_dir / "saved-html-exercise-predict.png"))
        assert saved.errors == []
        assert all(u.startswith(("file:", "blob:", "data:")) for u in saved.requests), saved.requests
