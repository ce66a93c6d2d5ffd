/**
 * The animator's clock: a step index 0…N over the timeline, autoplay at a speed, and jumps.
 * Like Python Tutor's ExecutionVisualizer it holds only the index; whoever listens redraws
 * from the timeline at that index. Stepping or scrubbing pauses autoplay.
 *
 * NOTE [playback that scales]
 *   Playing goes by the clock, not by counting ticks: at each tick the step is where the
 *   elapsed time says it should be, so slow frames skip steps instead of stretching the run.
 *   The top speed, "fit", plays any run in at most MAX_PLAY_MS (6,412 steps of a 200-step GRU
 *   in 25 s rather than 32 minutes at 1×); steps that are skipped over are not animated.
 */
export const BASE_STEP_MS = 300;
export const MAX_PLAY_MS = 25_000;
const TICK_MS = 16;

export class Player {
  /**
   * @param state     the view state (app/state.js): the step and `playing` live there (NOTE [the
   *                  step's one home]); anything with get(key)/set(patch) will do
   * @param onChange  (k, {animate, playing}) => void, after each move
   */
  constructor(state, onChange) {
    this.state = state;
    this.onChange = onChange;
    this.N = 0;
    this.segments = [];
    this.speed = 1;
    this._timer = 0;
  }

  get k() { return this.state.get("step"); }

  get playing() { return this.state.get("playing"); }

  set playing(on) { this.state.set({ playing: on }); }

  reset(N, segments, k = N) {
    this.pause();
    this.N = N;
    this.segments = segments;
    this.go(k);
  }

  /** Milliseconds per step: 300 ms at 1×; "fit" is 16× or faster, so the whole run takes ≤ MAX_PLAY_MS. */
  get intervalMs() {
    if (this.speed === "fit") return Math.min(BASE_STEP_MS / 16, MAX_PLAY_MS / Math.max(1, this.N));
    return BASE_STEP_MS / this.speed;
  }

  setSpeed(speed) {
    this.speed = speed === "fit" ? "fit" : Number(speed) || 1;
    if (this.playing) this._restartClock();
  }

  go(k, { animate = false, fromUser = false } = {}) {
    if (fromUser) this.pause();
    const next = Math.max(0, Math.min(this.N, k));
    this.state.set({ step: next });
    this.onChange(next, { animate, playing: this.playing });
  }

  step(d) { this.go(this.k + d, { animate: d === 1, fromUser: true }); }

  play() {
    if (this.playing || this.N === 0) return;
    if (this.k >= this.N) this.go(0);
    this.playing = true;
    this.onChange(this.k, { animate: false, playing: true });
    this._restartClock();
    const tick = () => {
      if (!this.playing) return;
      const target = Math.min(this.N, this._k0 + Math.floor((performance.now() - this._t0) / this.intervalMs + 0.5));
      if (target > this.k) this.go(target, { animate: target === this.k + 1 });
      if (this.k >= this.N) { this.pause(); return; }
      this._timer = setTimeout(tick, Math.max(TICK_MS, this.intervalMs));
    };
    this._timer = setTimeout(tick, Math.max(TICK_MS, this.intervalMs));
  }

  _restartClock() { this._t0 = performance.now(); this._k0 = this.k; }

  pause() {
    clearTimeout(this._timer);
    if (!this.playing) return;
    this.playing = false;
    this.onChange(this.k, { animate: false, playing: false });
  }

  toggle() { if (this.playing) this.pause(); else this.play(); }

  /** Start of the current phase, or of the previous one when already at a start. */
  phaseBack() {
    const starts = [0, ...this.segments.map((s) => s.start - 1)];
    const target = starts.filter((s) => s < this.k).pop() ?? 0;
    this.go(target, { fromUser: true });
  }

  /** End of the current phase, or of the next one when already at an end. */
  phaseForward() {
    const ends = this.segments.map((s) => s.end);
    const target = ends.find((e) => e > this.k) ?? this.N;
    this.go(target, { fromUser: true });
  }
}
