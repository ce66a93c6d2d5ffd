/**
 * Every tensor of a node at a step, as the inspector lists them: the document's TensorValues
 * (docs/CONTRACT.md) with a title, each with its `key` in the tensor file, or why it has none.
 * Pure: node:test checks it (test/tensors.test.js).
 */

/**
 * @param {object} index  graph/document.js indexDocument's
 * @param {object} timeline  graph/timeline.js Timeline
 * @param {number} i  the node's index
 * @param {number} k  the current step
 * @returns {{title: string, tv: object, key: string|null, why: string|null}[]}
 */
export function nodeTensors(index, timeline, i, k) {
  const n = index.nodes[i];
  const out = [];
  // `would`: the key it has in the file when kept (docs/CONTRACT.md), to find why it is not
  const add = (title, tv, would = null) => {
    if (tv) out.push({ title, tv, key: tv.key || null, why: tv.key ? null : leftOutWhy(index.doc, tv, would) });
  };
  (n.output || []).forEach((tv, j) => add(n.output.length > 1 ? `output[${j}], as the op returned it` : "output, as the op returned it", tv));
  if (!n.output) {  // a forward value the recording let go of (the budget) is named by its key alone
    const gone = leftOutputs(index.doc, n.id);
    gone.forEach(({ j, reason }) => out.push({
      title: gone.length > 1 ? `output[${j}], as the op returned it` : "output, as the op returned it",
      tv: { shape: n.shape, dtype: n.dtype }, key: null, why: `not kept: ${reasonWords(reason)}` }));
  }
  const step = timeline.lastBackward(i, k);
  if (step != null) {
    const ev = timeline.event(step), e = `e${step - 1}`;  // events[step - 1]
    (ev.grad_outputs || []).forEach((g, j) => add(`grad_outputs[${j}] (flowing in) · step ${step}`, g, `${e}.go${j}`));
    (ev.grad_inputs || []).forEach((g, j) => add(`grad_inputs[${j}] (flowing out) · step ${step}`, g, `${e}.gi${j}`));
    add(`grad accumulated · step ${step}`, ev.grad, `${e}.grad`);
  }
  const leaf = index.kind[i] === "acc" ? index.leafOfAcc.get(i) : n.kind === "tensor" ? i : null;
  if (leaf != null) {
    const ln = index.nodes[leaf];
    const g = timeline.leafGradAt(leaf, k);
    if (g) {  // how many accumulations: the inspector's own line (resets counted)
      const h = (ln.grad_history || []).indexOf(g.value);
      add(".grad at this step", g.value, h >= 0 ? `${ln.id}.gh${h}` : `e${g.step - 1}.grad`);
    }
    if (leaf === i) {
      add("value at the start", ln.value, `${ln.id}.value`);
      add("value at the end of the run", ln.value_end, `${ln.id}.end`);
    }
  }
  return out;
}

/** A function node's forward outputs the tensor file lists as left out (`n{id}.out{j}`). */
function leftOutputs(doc, id) {
  const prefix = `${id}.out`;
  const left = (doc && doc.tensors && doc.tensors.left_out) || [];
  return left.filter((e) => e.key.startsWith(prefix) && /^\d+$/.test(e.key.slice(prefix.length)))
    .map((e) => ({ j: Number(e.key.slice(prefix.length)), reason: e.reason })).sort((a, b) => a.j - b.j);
}

/** The tensor file's reasons for leaving a tensor out (docs/CONTRACT.md, `left_out`), in words. */
const REASONS = {
  budget: "past the run's byte budget",
  dtype: "a dtype or layout a safetensors file cannot hold (complex, sparse, quantized, a tensor subclass)",
  changed: "changed in place before it could be copied",
  transform: "made inside a torch.func transform (vmap, grad), with no values outside it",
};

export function reasonWords(reason) { return REASONS[reason] || reason; }

/** Why a TensorValue has no key: its own entry among those the file lists as left out (`would`:
 *  the key it would have had), else the file's reasons together, or that no file was kept. */
export function leftOutWhy(doc, tv, would = null) {
  const file = doc && doc.tensors;
  if (!file) return "this run kept no tensor file";
  const own = would != null ? (file.left_out || []).find((e) => e.key === would) : null;
  if (own) return `not kept: ${reasonWords(own.reason)}`;
  if (!file.left_out_count) return "not kept";
  return `not kept: ${file.left_out_count} tensors were left out of this run's file (${leftOutSummary(file)})`;
}

/** "past the run's byte budget ×12; a dtype or layout … ×1": the reasons the file gives. */
export function leftOutSummary(file) {
  const counts = new Map();
  for (const e of file.left_out || []) counts.set(e.reason, (counts.get(e.reason) || 0) + 1);
  return [...counts].map(([r, c]) => `${reasonWords(r)} ×${c}`).join("; ") || "reasons not listed";
}
