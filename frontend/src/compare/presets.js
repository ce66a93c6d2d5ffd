/**
 * One-click comparisons from the compare page: run A's code again as B with another seed, with
 * edited code, on CUDA (where the service has a GPU), or with checkpointing switched off (a
 * snippet that calls `checkpoint(f, x, ...)`). Each runs B (POST /api/runs), shares both runs
 * (POST /api/compare/links) and opens the new link.
 */
import { ApiError, compareLink, runSnippet, shareDocument } from "../api.js";

const CHECKPOINT_CALL = /checkpoint\(\s*([\w.]+)\s*,\s*([^,()]+?)\s*(?:,[^()]*)?\)/g;

const MANUAL_SEED = /^(?!\s*#)(.*?\btorch\.(?:random\.)?manual_seed\(\s*)(\d+)(\s*\))/m;

/**
 * A snippet that seeds itself (`torch.manual_seed(0)`) makes the same numbers whatever seed the
 * run is given: `{line, seed}` of its first such call, or null when it has none.
 */
export function selfSeed(code) {
  const m = MANUAL_SEED.exec(code || "");
  if (!m) return null;
  return { line: code.slice(0, m.index).split("\n").length, seed: Number(m[2]) };
}

/** `code` with its first `torch.manual_seed(n)` call given `seed` instead. */
export function withSeed(code, seed) {
  return code.replace(MANUAL_SEED, (_all, head, _n, tail) => `${head}${seed}${tail}`);
}

/** `code` with every `checkpoint(f, x, ...)` call made a plain `f(x)`, or null if it has none. */
export function withoutCheckpointing(code) {
  const out = code.replace(CHECKPOINT_CALL, "$1($2)");
  return out === code ? null : out;
}

export function installPresets(page) {
  const $ = (id) => document.getElementById(id);
  const a = page.docs.a;
  const status = $("preset-status");
  const go = async (label, body) => {
    status.textContent = `Running B (${label})…`;
    for (const b of document.querySelectorAll(".gt-presets button")) b.disabled = true;
    try {
      const run = await runSnippet({ code: body.code, device: body.device || a.device || "cpu", seed: body.seed ?? a.seed ?? 0 });
      const link = await linkTo(page.config.a, run);
      status.textContent = "Opening the comparison…";
      location.assign(new URL(link.url).pathname);
    } catch (err) {
      status.textContent = `Could not run B: ${err.message}`;
      for (const b of document.querySelectorAll(".gt-presets button")) b.disabled = false;
    }
  };
  // A snippet that calls torch.manual_seed itself ignores the run's seed: say so, and vary the
  // seed in the code instead (the preset would otherwise change nothing).
  const own = a.code ? selfSeed(a.code) : null;
  const seedButton = $("preset-seed");
  if (own) {
    seedButton.textContent = "another seed (in the code)";
    seedButton.title = `A's code calls torch.manual_seed(${own.seed}) itself on line ${own.line}, so the run's seed changes nothing: ` +
      `this runs B with torch.manual_seed(${own.seed + 1}) there`;
    const note = Object.assign(document.createElement("p"), { className: "gt-muted gt-self-seeded",
      textContent: `A's code seeds itself (torch.manual_seed(${own.seed}), line ${own.line}): another seed for the run would change nothing, so this preset changes that call.` });
    note.dataset.gt = "self-seeded";
    seedButton.closest(".gt-presets").after(note);
  }
  seedButton.addEventListener("click", () => (own
    ? go("another seed in the code", { code: withSeed(a.code, own.seed + 1), seed: a.seed ?? 0 })
    : go("another seed", { code: a.code, seed: (a.seed ?? 0) + 1 })));
  const cuda = $("preset-cuda");
  cuda.hidden = !page.config.cuda_available;
  cuda.addEventListener("click", () => go("CUDA", { code: a.code, device: "cuda" }));
  const plain = a.code ? withoutCheckpointing(a.code) : null;
  if (plain) {
    const btn = Object.assign(document.createElement("button"), { type: "button", id: "preset-no-checkpoint",
      textContent: "checkpointing off", title: "Run A's code with every checkpoint(f, x) call made f(x)" });
    $("preset-cuda").after(btn);
    btn.addEventListener("click", () => go("checkpointing off", { code: plain }));
  }
  const form = $("edit-form");
  $("preset-edit").addEventListener("click", () => {
    form.hidden = !form.hidden;
    $("preset-edit").setAttribute("aria-expanded", String(!form.hidden));
    if (!form.hidden) { $("edit-code").value = page.docs.b.code || a.code || ""; $("edit-code").focus(); }
  });
  form.addEventListener("submit", (ev) => { ev.preventDefault(); go("edited code", { code: $("edit-code").value }); });
}

/** The compare link of A with the new run B (shared whole when this replica does not keep it). */
async function linkTo(a, run) {
  try {
    return await compareLink({ share_id: a }, { run_id: run.id });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
    const share = await shareDocument(run, { stored: false });
    return compareLink({ share_id: a }, { share_id: share.id });
  }
}
