/**
 * One-click comparisons from the compare page: run A's code again as B with another seed, with
 * edited code, on CUDA (where the service has a GPU), or with checkpointing switched off (a
 * snippet that calls `checkpoint(f, x, ...)`). Each runs B (POST /api/runs), shares both runs
 * (POST /api/compare/links) and opens the new link.
 */
import { ApiError, compareLink, runSnippet, shareDocument } from "../api.js";

const CHECKPOINT_CALL = /checkpoint\(\s*([\w.]+)\s*,\s*([^,()]+?)\s*(?:,[^()]*)?\)/g;

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
  $("preset-seed").addEventListener("click", () => go("another seed", { code: a.code, seed: (a.seed ?? 0) + 1 }));
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
