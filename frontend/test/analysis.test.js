// The page's analysis twin (src/analysis/ and the document model in src/graph/) holds pure
// modules only: they import nothing but each other, touch no DOM, and load in Node. This test
// reads every import, so a widget that slips into the folder fails here, not in a review.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";

const SRC = new URL("../src/", import.meta.url);
const PURE = ["analysis", "graph"];
const DOM = /\b(document|window|navigator|localStorage|requestAnimationFrame|HTMLElement|customElements)\b\s*[.(]|\baddEventListener\(/;

/** What is wrong with one pure module's source: imports leaving the pure folders, DOM use. */
export function impurities(source, folder) {
  const bad = [];
  // Comments may name anything; only code counts.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1");
  for (const m of code.matchAll(/\bfrom\s+["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']/g)) {
    const spec = m[1] || m[2];
    const local = spec.startsWith("./");
    const sibling = PURE.some((f) => spec.startsWith(`../${f}/`));
    if (!local && !sibling) bad.push(`${folder}: imports ${spec}`);
  }
  const dom = DOM.exec(code.replace(/(["'])[^"'\n]*\1/g, "\"\""));
  if (dom) bad.push(`${folder}: uses the DOM (${dom[0].trim()})`);
  return bad;
}

const modules = PURE.flatMap((folder) => readdirSync(new URL(`${folder}/`, SRC)).filter((f) => f.endsWith(".js")).map((f) => `${folder}/${f}`));

test("the checker catches a widget's import and DOM use", () => {
  assert.deepEqual(impurities('import { x } from "../ui/panels.js";', "analysis"), ["analysis: imports ../ui/panels.js"]);
  assert.equal(impurities("export const el = document.createElement('div');", "analysis").length, 1);
  assert.deepEqual(impurities('import { y } from "./names.js";\n// document.body in a comment', "analysis"), []);
});

test("every analysis and graph module is pure", () => {
  assert.ok(modules.length >= 10, `found ${modules.length} modules`);
  const bad = modules.flatMap((m) => impurities(readFileSync(new URL(m, SRC), "utf8"), m));
  assert.deepEqual(bad, []);
});

test("every analysis and graph module loads in Node, without a page", async () => {
  for (const m of modules) {
    const mod = await import(new URL(m, SRC));
    assert.ok(Object.keys(mod).length > 0, `${m} exports nothing`);
  }
});
