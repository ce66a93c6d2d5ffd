/**
 * The run controller: reads the run options (device, seed), posts the snippet, shows the
 * progress while the sandbox works, and hands the document over. Cancel abandons the request.
 * Outcomes that are not a document (refused, cancelled, network) go to `onStatus`.
 */
import { ApiError, runSnippet } from "../api.js";

export class RunController {
  /**
   * @param {{run: HTMLButtonElement, cancel: HTMLButtonElement, progress: HTMLElement,
   *          device: HTMLSelectElement, seed: HTMLInputElement}} els
   * @param {{code: ()=>string, onDocument: (doc:object)=>Promise<unknown>,
   *          onStatus: (status:string, text:string)=>void, enabled: ()=>boolean}} cb
   */
  constructor(els, cb) {
    this.els = els;
    this.cb = cb;
    this.running = false;
    this.controller = null;
    this._progTimer = 0;
    els.run.addEventListener("click", () => this.run());
    els.cancel.addEventListener("click", () => this.cancel());
  }

  /** The seed field as a number, null when empty, or undefined when it is not valid. */
  seed() {
    const text = this.els.seed.value.trim();
    if (text === "") return null;
    const seed = Number(text);
    return Number.isInteger(seed) && seed >= 0 ? seed : undefined;
  }

  async run() {
    if (!this.cb.enabled() || this.running) return;
    const seed = this.seed();
    if (seed === undefined) {
      this.cb.onStatus("refused", "The seed must be a whole number ≥ 0, or empty.");
      return;
    }
    this.controller = new AbortController();
    this.setRunning(true);
    try {
      const extra = this.cb.extra ? this.cb.extra() : {};  // an open exercise (ui/exercises.js)
      const doc = await runSnippet({ code: this.cb.code(), device: this.els.device.value, seed, ...extra }, this.controller.signal);
      await this.cb.onDocument(doc);
    } catch (err) {
      if (err.name === "AbortError") this.cb.onStatus("cancelled", "Cancelled: the run was abandoned.");
      else if (err instanceof ApiError) this.cb.onStatus("refused", `Refused (${err.status || "network"}): ${err.message}`);
      else { this.cb.onStatus("refused", `Could not show the result: ${err.message}`); console.error(err); }
    } finally {
      this.setRunning(false);
    }
  }

  cancel() { if (this.controller) this.controller.abort(); }

  /** Enable or disable the Run button (share mode disables it). */
  setEnabled(on) { this.els.run.disabled = !on || this.running; }

  setRunning(on) {
    this.running = on;
    this.els.run.disabled = on || !this.cb.enabled();
    this.els.cancel.hidden = !on;
    const prog = this.els.progress;
    clearInterval(this._progTimer);
    prog.hidden = !on;
    document.body.classList.toggle("gt-running", on);
    if (on) {
      const t0 = performance.now();
      const tick = () => { prog.textContent = `Running… ${((performance.now() - t0) / 1000).toFixed(1)} s`; };
      tick();
      this._progTimer = setInterval(tick, 100);
    }
  }
}
