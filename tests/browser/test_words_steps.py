"""Every step in words, search, jumps, share-at-step, accumulation truth and playback at scale,
driven as a user would in Debian Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from browser.pageutil import pick_node, run_code, run_example
from pageguard import wait_until
from programs import ADAM_20, GRU_200


def fmt_num(v: float) -> str:
    """A number as the page writes it (graph/values.js fmtNum), for the scalars used here."""
    if float(v).is_integer() and abs(v) < 1e6:
        return str(int(v))
    a = abs(v)
    if a < 1e-3 or a >= 1e5:
        return f"{v:.2e}".replace("e-0", "e-").replace("e+0", "e+")
    return f"{float(f'{v:.4g}'):g}"


def sentence(page: Any) -> str:
    return str(page.locator("#sentence").inner_text())


def step_to(page: Any, k: int) -> None:
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(k):
        page.keyboard.press("ArrowRight")
    assert page.evaluate("window.gradtrace.app.player.k") == k


def test_sentences_match_the_events(playground: Any) -> None:
    page = playground
    doc = run_example(page, "chain_rule")
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    leaf_of_acc = {e["target"]: nodes[e["source"]] for e in doc["graph"]["edges"]
                   if nodes[e["source"]]["kind"] == "tensor" and nodes[e["target"]].get("name") == "AccumulateGrad"}
    code = doc["code"].split("\n")
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    assert sentence(page).startswith("Before the first step")
    assert page.locator("#sentence").get_attribute("aria-live") == "polite"
    for k, ev in enumerate(doc["events"], 1):
        page.keyboard.press("ArrowRight")
        text = sentence(page)
        node = nodes[ev["node"]]
        if ev["phase"] == "forward":
            statement = code[ev["line"] - 1].split("#")[0].strip()
            assert text.startswith(f"line {ev['line']}, {statement}: "), (k, text)
            assert "`" not in text, (k, text)  # the statement is drawn as code (ui/dom.js withCode)
            if node["name"] == "AccumulateGrad":
                assert f"AccumulateGrad is created for {leaf_of_acc[node['id']]['name']}" in text, (k, text)
            else:
                assert f"{node['name']}" in text and " is created" in text, (k, text)
        elif node["name"] == "AccumulateGrad":
            leaf = leaf_of_acc[node["id"]]["name"]
            added, now = ev["grad_outputs"][0]["values"], ev["grad"]["values"]
            expected = f"AccumulateGrad adds {fmt_num(added)} to {leaf}.grad, which is now {fmt_num(now)}."
            assert text.endswith(expected), (k, text)
        else:
            received = ev["grad_outputs"][0]["values"]
            assert f"receives ∇ = {fmt_num(received)} and passes " in text, (k, text)
            for g in ev["grad_inputs"]:
                if g is not None:
                    assert f"{fmt_num(g['values'])} to " in text, (k, text)
    # The last step: x.grad is 7 (2x + 3 at x = 2), said in words.
    assert re.search(r"adds 7 to x\.grad, which is now 7\.$", sentence(page)), sentence(page)


def test_search_finds_ops_and_modules_and_opens_their_groups(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_example(page, "transformer_block")
    collapsed = set(page.evaluate("[...window.gradtrace.app.state.get('collapsed')]"))
    folds = page.evaluate("window.gradtrace.app.scene.view.vnodes.filter(v => v.fold).length")
    assert collapsed or folds, "the transformer's layers start folded"
    page.locator("#graph").focus()
    page.keyboard.press("/")
    box = page.locator("#search")
    assert page.evaluate("document.activeElement.id") == "search"
    box.fill("self_attn")
    count = page.locator("#search-count")
    assert re.fullmatch(r"\d+ matches", count.inner_text()), count.inner_text()
    total = int(count.inner_text().split()[0])
    box.press("Enter")
    wait_until(page, "document.querySelector('#search-count').textContent.startsWith('1 of')")
    picked = page.evaluate("""() => { const a = window.gradtrace.app, v = a.state.get('selection').v;
        const vn = a.scene.view.vnodes[v]; return { kind: vn.kind, module: a.index.module[vn.refs[0]] }; }""")
    assert picked["kind"] != "group" and "self_attn" in picked["module"], picked
    # Its groups were opened: no folded module contains it any more.
    now = set(page.evaluate("[...window.gradtrace.app.state.get('collapsed')]"))
    assert not any(picked["module"] == p or picked["module"].startswith(p + ".") for p in now), (picked, now)
    assert page.locator("#inspector h3").inner_text() != ""
    box.press("Enter")
    wait_until(page, "document.querySelector('#search-count').textContent.startsWith('2 of')")
    assert count.inner_text() == f"2 of {total}"
    page.screenshot(path=str(artifacts_dir / "words-search.png"))
    # An op by name, and a line.
    box.fill("AddmmBackward0")
    box.press("Enter")
    wait_until(page, "document.querySelector('#search-count').textContent.startsWith('1 of')")
    assert page.locator("#inspector h3").inner_text() == "AddmmBackward0"
    box.fill("zzz-nothing")
    assert count.inner_text() == "no match"


def test_share_link_opens_at_the_step_it_was_shared_from(playground: Any) -> None:
    page = playground
    run_example(page, "chain_rule")
    step_to(page, 4)
    said = sentence(page)
    page.get_by_role("button", name="Share").click()
    expect(page.locator("#share-url")).to_have_value(re.compile(r"/s/.+"))
    url = page.locator("#share-url").input_value()
    assert "?step=4&" in url or url.endswith("?step=4"), url  # with the camera (frontend/src/app/link.js)
    page.goto(url)
    wait_until(page, "Number(document.body.dataset.ready || 0) > 0")
    assert page.evaluate("window.gradtrace.app.player.k") == 4
    assert sentence(page) == said
    assert page.locator("#tl-label").inner_text().startswith("Step 4/")


def test_keys_jump_by_line_iteration_and_pass_and_grads_tell_the_truth(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, ADAM_20)
    doc = page.evaluate("window.gradtrace.app.doc")
    events = doc["events"]
    k = lambda: page.evaluate("window.gradtrace.app.player.k")  # noqa: E731
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    page.keyboard.press("i")  # the first turn of the loop
    first = k()
    assert first >= 1 and all(e["phase"] == "forward" for e in events[:first]), first
    page.keyboard.press("i")  # the second turn: its first forward step after backward 1
    assert events[k() - 1]["phase"] == "forward" and events[k() - 2]["phase"] == "backward", k()
    second = k()
    page.keyboard.press("Shift+I")
    assert k() == first
    page.keyboard.press("p")  # the next pass: backward 1 starts
    assert (events[k() - 1]["phase"], events[k() - 1]["pass"], events[k() - 2]["phase"]) == ("backward", 0, "forward")
    line_now = events[k() - 1]["line"]
    page.keyboard.press("l")  # backward 1 runs on the backward() line: the next line is the next turn's
    assert events[k() - 1]["line"] != line_now and k() == second
    page.keyboard.press("PageDown")
    assert (events[k() - 1]["phase"], events[k() - 1]["pass"], events[k() - 2]["phase"]) == ("backward", 1, "forward")
    page.keyboard.press("PageUp")
    assert k() == second
    page.screenshot(path=str(artifacts_dir / "words-adam-iteration.png"))
    # zero_grad() cleared .grad every turn: the inspector says 1 accumulation since, not 20.
    page.keyboard.press("End")
    pick_node(page, re.compile("^model\\.0\\.weight"))
    head = page.locator("#inspector .gt-tensor h4", has_text=".grad at this step").first.inner_text()  # after its value
    since = r"\(1 accumulation since \.grad was (cleared|set to None|zeroed)( at line \d+)? · 20 in all\)"
    assert re.search(since, head), head
    assert "20 accumulations" not in page.locator("#inspector").inner_text()
    resets = page.locator("#inspector .gt-history .gt-reset")
    assert resets.count() == 19, resets.count()
    page.screenshot(path=str(artifacts_dir / "words-adam-weight.png"))


def test_top_speed_plays_the_gru_200_in_under_30_seconds(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    run_code(page, GRU_200)
    n = page.evaluate("window.gradtrace.app.player.N")
    assert n > 6000, n  # 200 GRUCell calls: thousands of steps
    page.locator("#tl-speed").select_option("fit")
    # the speed's promise: the whole run in at most 30 s of playing
    assert page.evaluate("window.gradtrace.app.player.intervalMs") * n <= 30_000
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    # The page's own clock times the play, from the first moment it plays to the step that ends
    # it: a loaded machine delays the key press and the test's polling, not the player's clock.
    page.evaluate("""() => {
      const p = window.gradtrace.app.player;
      window.__gtPlay = { start: null, end: null };
      const watch = () => {
        const t = performance.now();
        if (window.__gtPlay.start == null && p.playing) window.__gtPlay.start = t;
        if (window.__gtPlay.start != null && p.k >= p.N) { window.__gtPlay.end = t; return; }
        setTimeout(watch, 20);
      };
      watch();
    }""")
    page.keyboard.press("Space")
    wait_until(page, "window.gradtrace.app.player.k > 0", timeout=60_000, polling=100)
    assert page.evaluate("window.gradtrace.app.player.playing")
    page.screenshot(path=str(artifacts_dir / "words-gru-playing.png"))
    wait_until(page, "window.__gtPlay.end != null", timeout=180_000, polling=100)
    play = page.evaluate("window.__gtPlay")
    elapsed_s = (play["end"] - play["start"]) / 1000
    # By the clock it takes its 25 s (slow frames skip steps); a player that counted its ticks
    # would take over 100 s even on an idle machine (6,400 ticks of at least 16 ms). The
    # margin is for the last tick, which a busy machine may run late.
    assert 20 <= elapsed_s <= 60, f"the whole run played in {elapsed_s:.1f} s of the page's clock"
    assert not page.evaluate("window.gradtrace.app.player.playing")


def test_inspector_follows_an_expanded_group(playground: Any) -> None:
    page = playground
    run_example(page, "transformer_block")
    group = page.evaluate("""() => { const s = window.gradtrace.app.scene;
        const v = s.view.vnodes.findIndex(n => n.kind === 'group'); return { v, label: s.view.vnodes[v].label }; }""")
    assert group["v"] >= 0
    page.evaluate(f"window.gradtrace.app.viewer.selectNode({group['v']})")
    expand = page.locator("#inspector").get_by_role("button", name=re.compile("^(Expand|Show the blocks)"))
    title = page.locator("#inspector h3")
    assert title.inner_text() == group["label"]
    expand.click()
    wait_until(page, f"window.gradtrace.app.scene.view.vnodes.length > 0 && "
                           f"document.querySelector('#inspector h3').textContent !== {group['label']!r}")
    shown = page.evaluate("""() => { const a = window.gradtrace.app, v = a.state.get('selection').v;
        return v >= 0 ? a.scene.view.vnodes[v].label : null; }""")
    assert shown is not None and title.inner_text() == shown
