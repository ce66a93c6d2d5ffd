// The page's layer order, beside the purity test (analysis.test.js): app → ui/render →
// analysis/tensors (reading a tensor file, drawing one tensor) → graph/layout/animate. A module imports its own layer or a lower one, never a higher one, so
// a panel never reaches into the viewer and the pure model never into a panel. The entry
// points (src/*.js: the page, the embedded viewer, the saved file's script, the service calls)
// and the pages built on the viewer (compare/, widget/) sit with app/.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));
const LAYERS = [["graph", "layout", "animate"], ["analysis", "tensors"], ["ui", "render"], ["app", "compare", "widget", "."]];

/** The layer of a module path relative to src/ (its top folder; "." for src/ itself), or −1. */
export function layerOf(path) {
  const top = path.includes("/") ? path.slice(0, path.indexOf("/")) : ".";
  return LAYERS.findIndex((folders) => folders.includes(top));
}

/** The upward imports of one module's source: "from → to" for each import of a higher layer. */
export function upward(path, source) {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
  const bad = [];
  for (const m of code.matchAll(/\bfrom\s+["'](\.{1,2}\/[^"']+)["']|\bimport\s*\(\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    const to = normalize(join(dirname(path), m[1] || m[2]));
    if (layerOf(to) > layerOf(path)) bad.push(`${path} → ${to}`);
  }
  return bad;
}

function modules(dir = SRC, rel = "") {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return modules(p, `${rel}${f}/`);
    return f.endsWith(".js") ? [`${rel}${f}`] : [];
  });
}

test("the checker catches an upward import and lets a downward one through", () => {
  assert.deepEqual(upward("ui/goals.js", 'import { part } from "../app/parts.js";'), ["ui/goals.js → app/parts.js"]);
  assert.deepEqual(upward("graph/view.js", 'import { fmt } from "../analysis/format.js";'), ["graph/view.js → analysis/format.js"]);
  assert.deepEqual(upward("render/draw.js", 'import { el } from "../ui/dom.js";\n// from "../app/viewer.js" in a comment'), []);
  assert.deepEqual(upward("app/viewer.js", 'import { Player } from "../animate/player.js";'), []);
});

test("every module of src/ has a layer, and none imports a higher one", () => {
  const all = modules();
  assert.ok(all.length >= 60, `found ${all.length} modules`);
  assert.deepEqual(all.filter((m) => layerOf(m) < 0), []);
  assert.deepEqual(all.flatMap((m) => upward(m, readFileSync(join(SRC, m), "utf8"))), []);
});

test("the Viewer stays thin: at most 150 lines and 12 imports (NOTE [a thin viewer] in app/viewer.js)", () => {
  const source = readFileSync(join(SRC, "app/viewer.js"), "utf8");
  const lines = source.split("\n");
  const start = lines.findIndex((l) => l.startsWith("export class Viewer"));
  const end = lines.findIndex((l, i) => i > start && l === "}");
  assert.ok(start >= 0 && end > start);
  assert.ok(end - start + 1 <= 150, `the Viewer class is ${end - start + 1} lines`);
  const imports = lines.filter((l) => /^import\b/.test(l)).length;
  assert.ok(imports <= 12, `app/viewer.js has ${imports} imports`);
});
