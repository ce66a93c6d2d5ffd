"""Accessibility: axe-core (npm, pinned in frontend/package-lock.json, injected from node_modules)
finds no serious or critical violation in the playground, in light and in dark, with a run that
failed (the error panel, its marks) shown mid-way through its timeline; and popovers fit a
900 px-wide window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gradtrace.frontend import ROOT

from browser.pageutil import run_example

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """Serious and critical axe-core violations on the page as it is now."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        # evaluated through the DevTools protocol, which the page's policy does not govern (an
        # added <script> element would be refused: NOTE [tests keep the page's CSP] in tests/conftest.py)
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;void 0")
    result = page.evaluate("""async () => {
        const r = await axe.run(document, { resultTypes: ['violations'] });
        return r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' — ' + n.failureSummary) }));
    }""")
    return [v for v in result if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_or_critical_axe_violations(playground: Any, artifacts_dir: Path, scheme: str) -> None:
    assert AXE.exists(), "axe-core is missing: run `make frontend` (npm ci in frontend/)"
    page = playground
    page.emulate_media(color_scheme=scheme)
    doc = run_example(page, "inplace_hazard")
    assert doc["status"] == "error"
    page.locator("#graph").focus()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.locator("#search").fill("exp")
    page.screenshot(path=str(artifacts_dir / f"words-a11y-{scheme}.png"))
    found = axe_violations(page)
    report = [f"{v['id']} ({v['impact']}): {v['help']}\n  " + "\n  ".join(v["nodes"]) for v in found]
    assert found == [], "\n".join(report)


def test_popovers_fit_a_900px_window(playground: Any, artifacts_dir: Path) -> None:
    page = playground
    page.set_viewport_size({"width": 900, "height": 700})
    run_example(page, "transformer_block")
    for menu in ("#modules", "#legend", "#export-menu", "#examples"):
        summary = page.locator(f"{menu} > summary")
        summary.click()
        body = page.locator(f"{menu}[open] > :not(summary)").first
        box = body.bounding_box()
        assert box is not None, menu
        assert box["x"] >= 0 and box["x"] + box["width"] <= 900 + 0.5, (menu, box)
        page.screenshot(path=str(artifacts_dir / f"words-900-{menu[1:]}.png"))
        summary.click()
