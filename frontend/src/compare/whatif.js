/**
 * "What if" on a scalar: a slider on a scalar leaf or a literal of run A's code (or on the
 * seed) re-runs the snippet as run B and shows the change against A through the same
 * comparison (POST /api/compare), in place: no new page, one run in flight at a time, the
 * latest value wins. `page.whatIf.lastMs` is the time from releasing the slider to B's redraw.
 */
import { ApiError, compareRuns, runSnippet } from "../api.js";
import { findScalars, sliderRange, withScalar } from "./literals.js";
import { selfSeed, withSeed } from "./presets.js";

export function installWhatIf(page) {
  const a = page.docs.a;
  if (!a.code || a.status !== "ok") return;
  const scalars = findScalars(a.code);
  const box = document.getElementById("whatif");
  // A snippet that calls torch.manual_seed itself ignores the run's seed: the seed slider then
  // moves the seed in the code (compare/presets.js says the same on its button).
  const own = selfSeed(a.code);
  const seed = own
    ? { kind: "seed", own: true, name: "seed", value: own.seed, text: "0", label: `the seed (torch.manual_seed, line ${own.line})` }
    : { kind: "seed", name: "seed", value: a.seed ?? 0, text: "0", label: "the seed" };
  const choices = [...scalars.map((s) => ({ ...s, label: `${s.name} (line ${s.line})` })), seed];
  box.hidden = false;
  box.innerHTML = `<strong>What if</strong> <select id="wi-pick" aria-label="Scalar to change"></select>
    <input id="wi-slider" type="range" aria-label="Its value"> <output id="wi-value" for="wi-slider"></output>
    <span id="wi-status" class="gt-muted" role="status" aria-live="polite"></span>`;
  const $ = (id) => document.getElementById(id);
  const pick = $("wi-pick"), slider = $("wi-slider");
  choices.forEach((c, i) => pick.append(new Option(c.label, String(i))));
  const state = { busy: false, pending: null, inflight: null, drawn: null, releasedAt: 0, lastMs: null, runs: 0 };
  page.whatIf = state;

  const setChoice = () => {
    const c = choices[Number(pick.value)];
    const isInt = c.kind === "seed" || !/[.eE]/.test(c.text);
    const r = c.kind === "seed" ? { min: 0, max: 50, step: 1 } : sliderRange(c.value, isInt);
    Object.assign(slider, { min: String(r.min), max: String(r.max), step: String(r.step) });
    slider.value = String(c.value);
    $("wi-value").textContent = String(c.value);
  };
  const variant = (c, v) => (c.kind === "seed" && c.own ? { code: withSeed(a.code, Math.round(v)), seed: a.seed ?? 0 }
    : c.kind === "seed" ? { code: a.code, seed: Math.round(v) } : { code: withScalar(a.code, c, v), seed: a.seed ?? 0 });

  const runLatest = async () => {
    if (state.busy || state.pending == null) return;
    const v = state.pending;
    state.pending = null;
    state.busy = true;
    state.inflight = v;
    const c = choices[Number(pick.value)];
    try {
      const { code, seed } = variant(c, v);
      const t0 = performance.now();
      const doc = await runSnippet({ code, seed, device: a.device || "cpu" });
      const t1 = performance.now();
      const cmp = await compareB(page.config.a, doc);
      const t2 = performance.now();
      page.docs.b = doc;
      page.setComparison(cmp);
      await page.panes.b.load(doc, { step: page.table.b[Math.min(page.cursor, cmp.steps.length)] });
      page.go(page.cursor);
      state.parts = { run: t1 - t0, compare: t2 - t1, draw: performance.now() - t2 };
      state.runs += 1;
      state.drawn = v;
      if (state.releasedAt && state.pending == null) {
        state.lastMs = performance.now() - state.releasedAt;
        state.releasedAt = 0;
        $("wi-status").textContent = `B: ${c.name} = ${v} · redrawn ${Math.round(state.lastMs)} ms after release`;
      }
      document.body.dataset.whatif = String(state.runs);
    } catch (err) {
      $("wi-status").textContent = `Could not re-run: ${err.message}`;
    } finally {
      state.busy = false;
      if (state.pending != null) runLatest();
    }
  };
  slider.addEventListener("input", () => {
    $("wi-value").textContent = slider.value;
    state.pending = Number(slider.value);
    runLatest();
  });
  slider.addEventListener("change", () => {
    const v = Number(slider.value);
    state.releasedAt = performance.now();
    if (state.pending == null && ((state.busy && state.inflight === v) || (!state.busy && state.drawn === v))) {
      // The value released is the one being run (or drawn already, while the slider moved).
      if (!state.busy) { state.lastMs = 0; state.releasedAt = 0; }
      return;
    }
    state.pending = v;
    runLatest();
  });
  pick.addEventListener("change", setChoice);
  setChoice();
}

/** Compare run A with B by B's id (it is kept the moment it is answered); the whole document
 * when this replica of the service does not have it (404). */
async function compareB(a, doc) {
  try {
    return await compareRuns({ share_id: a }, { run_id: doc.id });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    return compareRuns({ share_id: a }, { document: doc });
  }
}
