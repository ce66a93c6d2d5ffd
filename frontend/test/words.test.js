// Unit tests of the step sentences (src/analysis/words.js) on documents recorded by gradtrace from
// the lessons and three small loops (fixtures/words_*.json: `gradtrace run` output, with the code).
// Run: node --test test/   (from frontend/)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { runLevels } from "../src/graph/groups.js";
import { moduleTree } from "../src/graph/modules.js";
import { ordinalWord } from "../src/analysis/names.js";
import {
  errorSentence, listWords, nameOf, segmentLabel, stepSentence, wordsContext,
} from "../src/analysis/words.js";
import { accumulationsAt } from "../src/analysis/accumulations.js";

// graph/timeline.js is the index of events; it lived in animate/ before.
const { Timeline } = await import("../src/graph/timeline.js").catch(() => import("../src/animate/timeline.js"));

function load(name, { withLevels = false } = {}) {
  const doc = JSON.parse(readFileSync(new URL(`./fixtures/words_${name}.json`, import.meta.url), "utf8"));
  const index = indexDocument(doc);
  const timeline = new Timeline(index);
  // The page names loop ops by the units graph/groups.js finds (app/viewer.js passes them).
  const levels = withLevels ? runLevels(index, timeline, moduleTree(index)) : [];
  return { doc, index, timeline, levels, ctx: wordsContext(index, timeline, null, levels) };
}

/** The sentence of the first event matching `pick(event, node index)`, and that step. */
function first(timeline, ctx, pick) {
  const k = timeline.events.findIndex((e, j) => pick(e, timeline.evNode[j])) + 1;
  assert.ok(k >= 1, "no such step");
  return { k, s: stepSentence(ctx, k) };
}

const byName = (index, name) => index.nodes.findIndex((n) => n.name === name);

test("listWords joins names and counts repeats", () => {
  assert.equal(listWords([]), "");
  assert.equal(listWords(["a"]), "a");
  assert.equal(listWords(["a", "b"]), "a and b");
  assert.equal(listWords(["a", "b", "c"]), "a, b and c");
  assert.equal(listWords(["x", "x"]), "x (twice)");
  assert.equal(listWords(["x", "x", "x", "y"]), "x (3 times) and y");
});

test("one sentence per step, and each names the node of its event", () => {
  const docs = ["01_chain_rule", "08_inplace_hazard", "09_accumulating_grads", "13_double_backward", "loop_gru", "loop_adam", "loop_lines"];
  for (const name of docs) {
    const { timeline, ctx } = load(name, { withLevels: name.startsWith("loop") });
    const seen = new Set();
    for (let k = 1; k <= timeline.N; k++) {
      const s = stepSentence(ctx, k);
      assert.ok(s.length > 10 && !s.includes("undefined") && !s.includes("null"), `${name} step ${k}: ${s}`);
      const who = timeline.index.kind[timeline.evNode[k - 1]] === "acc" ? "AccumulateGrad" : timeline.index.nodes[timeline.evNode[k - 1]].name;
      assert.ok(s.includes(who), `${name} step ${k} names ${who}: ${s}`);
      assert.ok(!/#\d/.test(s), `${name} step ${k} numbers no op: ${s}`);
      seen.add(s);
    }
    assert.ok(seen.size >= timeline.N - 1, `${name}: the sentences differ from step to step`);
    assert.match(stepSentence(ctx, 0), /^Before the first step/);
  }
});

test("chain rule: forward creation with line and code, backward with the gradients it passes", () => {
  const { index, timeline, ctx } = load("01_chain_rule");
  const ev = (k) => timeline.events[k - 1];
  const k0 = timeline.events.findIndex((e) => e.phase === "forward" && index.nodes[index.idx.get(e.node)].line === 5 && index.nodes[index.idx.get(e.node)].name === "MulBackward0") + 1;
  // The line is said once, before the code: the op's name does not repeat it.
  assert.equal(stepSentence(ctx, k0), "line 5, `a = x * x`: MulBackward0 is created from x (twice).");
  // The first backward step starts pass 0 at its line, and AddBackward0 (y) hands 1 on.
  const kb = timeline.events.findIndex((e) => e.phase === "backward") + 1;
  const s = stepSentence(ctx, kb);
  assert.ok(s.startsWith("backward 1 starts at line 8 (`y.backward()`). "), s);
  const g = ev(kb).grad_inputs[0].values;
  assert.ok(s.endsWith(`AddBackward0 (y) receives ∇ = 1 and passes ${g} to the 1st AddBackward0.`), s);
  // AccumulateGrad: adds 7 to x.grad, which is now 7 (the gradient 2x + 3 at x = 2).
  const last = stepSentence(ctx, timeline.N);
  const added = ev(timeline.N).grad_outputs[0].values;
  assert.ok(Math.abs(added - 7) < 1e-5);
  assert.equal(last, `AccumulateGrad adds ${added} to x.grad, which is now ${ev(timeline.N).grad.values}.`);
});

test("in-place hazard: the run stops with the API's sentence and, when recorded, both versions", () => {
  const { doc, timeline, ctx } = load("08_inplace_hazard");
  const s = stepSentence(ctx, timeline.N);
  assert.ok(s.endsWith("Then the run stopped: RuntimeError at line 7: `add_` at line 6 changed 'result', which ExpBackward0 saved for backward (version 0 → 1)."), s);
  assert.ok(errorSentence(ctx).includes("modified in place by `add_` at line 6"), errorSentence(ctx));
  assert.ok(errorSentence(ctx).endsWith("It was saved at version 0 and is now at version 1."), errorSentence(ctx));
  const withVersions = wordsContext(indexDocument({ ...doc, error: { ...doc.error, saved_version: 0, current_version: 1, inplace_op: "add_", saved_name: "result" } }), timeline);
  assert.ok(errorSentence(withVersions).endsWith("It was saved at version 0 and is now at version 1."), errorSentence(withVersions));
});

test("a shape error names the module, the op and the shapes it got", () => {
  const { doc, index, timeline } = load("01_chain_rule");
  const err = { type: "RuntimeError", message: "mat1 and mat2 shapes cannot be multiplied (3x8 and 5x2)", line: 4,
    module: "2", module_type: "Linear", op: "linear", shapes: [[3, 8], [2, 5]] };
  const ctx = wordsContext({ ...index, doc: { ...doc, error: err } }, timeline);
  assert.equal(errorSentence(ctx),
    "RuntimeError at line 4, raised by `linear` in 2 (Linear) with inputs of shape [3, 8] and [2, 5]: mat1 and mat2 shapes cannot be multiplied (3x8 and 5x2)");
});

test("beside the error box, which prints the message, the sentence never prints it again", () => {
  const { doc, index, timeline } = load("01_chain_rule");
  const shape = { type: "RuntimeError", message: "mat1 and mat2 shapes cannot be multiplied (3x8 and 5x2)", line: 4,
    module: "2", module_type: "Linear", op: "linear", shapes: [[3, 8], [2, 5]] };
  const ctx = wordsContext({ ...index, doc: { ...doc, error: shape } }, timeline);
  assert.equal(errorSentence(ctx, { besideMessage: true }), "Raised at line 4 by `linear` in 2 (Linear) with inputs of shape [3, 8] and [2, 5].");
  const plain = { type: "ValueError", message: "bad value", line: 3 };
  assert.equal(errorSentence(wordsContext({ ...index, doc: { ...doc, error: plain } }, timeline), { besideMessage: true }), "");
});

test("double backward: the pass with create_graph=True is named, and so are the nodes it builds", () => {
  const { index, timeline, ctx } = load("13_double_backward");
  const labels = timeline.segments.map((s) => segmentLabel(ctx, s));
  assert.ok(!labels.slice(1).includes("forward"), `nodes built by the first backward are not "forward": ${labels}`);
  // Passes are numbered from 1, and a create_graph backward is one segment with its built
  // steps inside it (NOTE [one segment per pass] in graph/timeline.js): no barcode of slivers.
  assert.deepEqual(labels, ["forward", "backward 1 (building a graph)", "backward 2"]);
  const built = timeline.segments[1];
  assert.ok(built.parts.length > 1 && built.parts.some((p) => p.phase === "forward"), JSON.stringify(built.parts));
  assert.equal(built.parts[0].start, built.start);
  assert.equal(built.parts[built.parts.length - 1].end, built.end);
  const k = timeline.events.findIndex((e) => index.nodes[index.idx.get(e.node)].created_in_pass === 0) + 1;
  assert.ok(k >= built.start && k <= built.end);
  assert.ok(stepSentence(ctx, k).endsWith("during backward 1 (building a graph)."), stepSentence(ctx, k));
});

test("accumulation without zero_grad counts up; a cleared .grad starts afresh", () => {
  const { doc, index, timeline, ctx } = load("09_accumulating_grads");
  const w = byName(index, "w");
  const acc = accumulationsAt(ctx, w, timeline.N);
  assert.deepEqual([acc.count, acc.total, acc.reset], [3, 3, null]);
  // The same run, told that .grad was set to None before the second and third accumulations.
  const nodes = doc.graph.nodes.map((n) => (n.name === "w" ? { ...n, grad_resets: [{ at: 1, kind: "none", line: 9 }, { at: 2, kind: "zero" }] } : n));
  const doc2 = { ...doc, graph: { ...doc.graph, nodes } };
  const index2 = indexDocument(doc2);
  const ctx2 = wordsContext(index2, new Timeline(index2));
  const acc2 = accumulationsAt(ctx2, w, timeline.N);
  assert.deepEqual([acc2.count, acc2.total, acc2.reset.kind], [1, 3, "zero"]);
  const s = stepSentence(ctx2, timeline.N);
  assert.ok(s.startsWith("backward 3 starts") || s.startsWith("AccumulateGrad sets w.grad to "), s);
  assert.ok(s.includes(".grad was zeroed since the last accumulation"), s);
});

test("a reset is read from Node.grad_resets only: .grad equal to what was added is no reset by itself", () => {
  const { doc } = load("09_accumulating_grads");
  // Each AccumulateGrad event's .grad equals what was added (as after zero_grad()), but the
  // document declares no reset: the accumulations count on.
  const events = doc.events.map((e) => (e.grad ? { ...e, grad: e.grad_outputs[0] } : e));
  const nodes = doc.graph.nodes.map(({ grad_resets, ...n }) => n);
  const index = indexDocument({ ...doc, events, graph: { ...doc.graph, nodes } });
  const tl = new Timeline(index);
  const ctx = wordsContext(index, tl);
  const acc = accumulationsAt(ctx, byName(index, "w"), tl.N);
  assert.deepEqual([acc.count, acc.total, acc.reset], [3, 3, null]);
});

test("a node made inside a module called many times says which call (Node.module_stack, RunDocument.modules)", () => {
  const { doc } = load("01_chain_rule");
  const nodes = doc.graph.nodes.map((n) => (n.name === "MulBackward0" && n.line === 6 ? { ...n, module: "cell", module_stack: [{ path: "cell", call: 36 }] } : n));
  const doc2 = { ...doc, graph: { ...doc.graph, nodes }, modules: [{ path: "cell", type: "GRUCell", calls: 200 }] };
  const index = indexDocument(doc2);
  const tl = new Timeline(index);
  const ctx = wordsContext(index, tl);
  const k = tl.events.findIndex((e) => e.phase === "forward" && index.nodes[index.idx.get(e.node)].module === "cell") + 1;
  assert.equal(stepSentence(ctx, k), "line 6, `b = 3 * x`: MulBackward0 is created from x in cell (call 37 of 200).");
});

test("ordinals read as words", () => {
  assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111].map(ordinalWord),
    ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th"]);
});

test("an unrolled GRUCell: repeated ops are named by their call, and the hidden state by the call it came from", () => {
  const { index, timeline, levels, ctx } = load("loop_gru", { withLevels: true });
  assert.equal(levels[0].kind, "call");
  const calls = levels[0].count;
  const unitOf = levels[0].unitOf;
  // SubBackward0 of call 2 is made from h, the last AddBackward0 of call 1 (the state carried over).
  const { k, s } = first(timeline, ctx, (e, v) => e.phase === "forward" && index.nodes[v].name === "SubBackward0" && unitOf[v] === 1);
  const v = timeline.evNode[k - 1];
  const h = index.inEdges[v].map((j) => index.edges[j].s).find((u) => index.nodes[u].name === "AddBackward0");
  const adds = index.nodes.map((n, u) => u).filter((u) => index.nodes[u].name === "AddBackward0" && unitOf[u] === unitOf[h]);
  assert.equal(unitOf[h], 0);
  const nth = ordinalWord(adds.indexOf(h) + 1);
  assert.equal(s, `line 7, \`h = cell(xs[t], h)\`: SubBackward0 (call 2 of ${calls}) is created from the ${nth} AddBackward0 (call 1 of ${calls}) and TanhBackward0 in cell.`);
  // Backward: the node says its line and call; what it passes to in the same call needs neither.
  const b = first(timeline, ctx, (e, u) => e.phase === "backward" && index.nodes[u].name === "SubBackward0");
  assert.match(b.s, new RegExp(`^SubBackward0 \\(line 7, call ${calls} of ${calls}\\) receives ∇ = .+ and passes .+ to (the \\d+(st|nd|rd|th) )?\\w+Backward0( and|\\.)`), b.s);
  assert.ok(!b.s.includes("call 2 of") && !/\(line 7[,)].*\(line 7/.test(b.s), b.s);
  for (let j = 1; j <= timeline.N; j++) assert.ok(!/#\d/.test(stepSentence(ctx, j)), stepSentence(ctx, j));
});

test("an Adam loop: each pass says its iteration, and two ops of one kind say their module", () => {
  const { index, timeline, levels, ctx } = load("loop_adam", { withLevels: true });
  assert.equal(levels[0].kind, "iteration");
  const n = levels[0].count;
  const p1 = first(timeline, ctx, (e) => e.phase === "backward" && e.pass === 1);
  assert.ok(p1.s.startsWith(`backward 2 (iteration 2 of ${n}) starts at line 10 (\`loss.backward()\`). MeanBackward0 (loss, iteration 2 of ${n}) receives ∇ = 1`), p1.s);
  const t = first(timeline, ctx, (e, v) => e.phase === "backward" && e.pass === n - 1 && index.nodes[v].name === "TBackward0" && index.module[v] === "model.0");
  assert.match(t.s, new RegExp(`^TBackward0 in model\\.0 \\(line 9, iteration ${n} of ${n}\\) receives ∇ = .+ and passes .+ to model\\.0\\.weight\\.$`), t.s);
  // Forward: the module is said once, at the end.
  const f = first(timeline, ctx, (e, v) => e.phase === "forward" && index.nodes[v].name === "TBackward0" && index.module[v] === "model.2");
  assert.equal(f.s, `line 9, \`loss = ((model(x) - y) ** 2).mean()\`: TBackward0 (iteration 1 of ${n}) is created from model.2.weight in model.2.`);
});

test("a plain Python loop: iterations found from its lines; without them, which one on the line", () => {
  const withIt = load("loop_lines", { withLevels: true });
  const { index, timeline } = withIt;
  const pick = (e, v) => e.phase === "forward" && index.nodes[v].name === "MulBackward0" && index.nodes[v].line === 5 && index.nodes[v].id !== index.nodes[timeline.evNode[1]].id;
  const a = first(timeline, withIt.ctx, pick);
  assert.equal(a.s, "line 5, `a = y * x`: MulBackward0 (iteration 2 of 3) is created from MulBackward0 (line 6, iteration 1 of 3) and x.");
  const bare = load("loop_lines");
  const b = first(bare.timeline, bare.ctx, pick);
  assert.equal(b.s, "line 5, `a = y * x`: the 2nd MulBackward0 is created from the 1st MulBackward0 (line 6) and x.");
  const last = stepSentence(bare.ctx, bare.timeline.N - 1);
  assert.match(last, /^The 1st MulBackward0 \(line 5\) receives ∇ = .+ and passes .+ to x \(twice\)\.$/, last);
});

test("the step that made the first NaN says so", () => {
  const doc = JSON.parse(readFileSync(new URL("./fixtures/findings_where_nan.json", import.meta.url), "utf8"));
  const index = indexDocument(doc);
  const timeline = new Timeline(index);
  const ctx = wordsContext(index, timeline);
  const f = doc.analysis.nonfinite[0];
  const k = timeline.events.indexOf(doc.events[f.event]) + 1;
  assert.ok(k >= 1);
  assert.match(stepSentence(ctx, k), /✱ This is the run's first NaN: SqrtBackward0 made it here\.$/);
  for (let j = 1; j <= timeline.N; j++) if (j !== k) assert.doesNotMatch(stepSentence(ctx, j), /first NaN/);
});
