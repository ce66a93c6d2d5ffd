// Predict mode's pure parts (src/analysis/predict.js) on the lessons' recorded numbers (the golden
// documents of tests/golden/): for every op of the Explain catalogue that a lesson records, the
// true value is accepted within the stated tolerance, and the value or the sign flipped is not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { checkAnswer, parseSpec, questionsFor, score, specParam } from "../src/analysis/predict.js";

const GOLDEN = new URL("../../tests/golden/", import.meta.url);
const lessons = readdirSync(GOLDEN).filter((f) => f.startsWith("lesson_")).sort()
  .map((f) => JSON.parse(readFileSync(new URL(f, GOLDEN), "utf-8")));
const catalogue = new Set(JSON.parse(readFileSync(new URL("./fixtures/explain_catalogue.json", import.meta.url), "utf-8")));

test("the lessons are all here", () => assert.equal(lessons.length, 15));

test("every catalogued op the lessons record: the true value is right, a flipped sign is wrong", () => {
  const covered = new Set();
  const recorded = new Set();
  for (const doc of lessons) {
    const byId = new Map(doc.graph.nodes.map((n) => [n.id, n]));
    for (const ev of doc.events) if (ev.phase === "backward" && (ev.grad_inputs || []).some((g) => g && g.values != null)) recorded.add(byId.get(ev.node).name);
    for (const q of questionsFor(doc, { scope: "all", nodes: [], line: null, shapes: false }).values()) {
      if (q.kind === "value") {
        assert.equal(checkAnswer(q, String(q.truth)).verdict, "right", q.prompt);
        assert.equal(checkAnswer(q, String(q.truth + 0.9 * q.tolerance)).verdict, "right", q.prompt);
        assert.equal(checkAnswer(q, String(q.truth + 1.1 * q.tolerance)).verdict, "wrong", q.prompt);
        if (q.truth !== 0) assert.equal(checkAnswer(q, String(-q.truth)).verdict, "wrong", `flipped: ${q.prompt}`);
        // the same step asked for the sign
        const sign = { ...q, kind: "sign" };
        if (q.truth !== 0) {
          assert.equal(checkAnswer(sign, q.truth > 0 ? "+" : "-").verdict, "right");
          assert.equal(checkAnswer(sign, q.truth > 0 ? "-" : "+").verdict, "wrong");
        }
      } else if (q.kind === "sign") {
        assert.equal(checkAnswer(q, q.truth > 0 ? "+" : "−").verdict, "right");
        assert.equal(checkAnswer(q, q.truth > 0 ? "negative" : "positive").verdict, "wrong");
        assert.equal(checkAnswer({ ...q, kind: "value" }, String(q.truth)).verdict, "right");
        assert.equal(checkAnswer({ ...q, kind: "value" }, String(-q.truth)).verdict, "wrong");
      } else if (q.kind === "none") {
        assert.equal(checkAnswer(q, String(q.truth[0])).verdict, "right");
        const other = q.choices.find((c) => !q.truth.includes(c.input));
        assert.equal(checkAnswer(q, String(other.input)).verdict, "wrong");
      }
      covered.add(q.name);
    }
  }
  const want = [...recorded].filter((op) => catalogue.has(op)).sort();
  const missing = want.filter((op) => !covered.has(op));
  assert.deepEqual(missing, [], `catalogued ops the lessons record that predict mode never asked about: ${missing}`);
  assert.ok(want.length >= 15, `only ${want.length} catalogued ops recorded`);
});

test("an answer that is not a number is asked again, not counted", () => {
  const q = { kind: "value", truth: 7, tolerance: 0.035 };
  for (const text of ["", "seven", "7x", "NaN", "1e400"]) assert.equal(checkAnswer(q, text).verdict, "invalid", text);
  assert.equal(checkAnswer(q, " 7.01 ").verdict, "right");
  assert.equal(checkAnswer({ kind: "sign", truth: -2 }, "maybe").verdict, "invalid");
  assert.equal(checkAnswer({ kind: "shape", truth: [2, 3] }, "two by three").verdict, "invalid");
  assert.equal(checkAnswer({ kind: "shape", truth: [2, 3] }, "[2, 3]").verdict, "right");
  assert.equal(checkAnswer({ kind: "shape", truth: [] }, "[]").verdict, "right");
  assert.equal(checkAnswer({ kind: "shape", truth: [2, 3] }, "3x2").verdict, "wrong");
});

test("which input gets no gradient: lesson 7's detached term", () => {
  const doc = lessons[6];
  const qs = [...questionsFor(doc, parseSpec("all")).values()];
  assert.ok(qs.length > 0);
  const score0 = score(new Map(qs.map((q) => [q.step, q])), {});
  assert.equal(score0.asked, qs.length);
  assert.equal(score0.answered, 0);
});

test("the teacher's choice round-trips through the link, and scopes the questions", () => {
  for (const p of ["all", "nodes:n3,n7", "line:7", "all+shapes", "shapes"]) assert.equal(specParam(parseSpec(p)), p);
  assert.equal(parseSpec("bogus"), null);
  assert.equal(parseSpec(""), null);
  const doc = lessons[0];  // the chain rule
  const all = questionsFor(doc, parseSpec("all"));
  const line = [...all.values()][0].line;
  const someNode = [...all.values()][0].node;
  const byNode = questionsFor(doc, parseSpec(`nodes:${someNode}`));
  assert.ok(byNode.size >= 1 && [...byNode.values()].every((q) => q.node === someNode));
  const byLine = [...questionsFor(doc, parseSpec(`line:${line}`)).values()];
  assert.ok(byLine.length >= 1 && byLine.length < all.size && byLine.every((q) => q.line === line));
  const shapes = questionsFor(doc, parseSpec("shapes"));
  assert.ok(shapes.size > 0 && [...shapes.values()].every((q) => q.kind === "shape"));
});
