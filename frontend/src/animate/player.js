/**
 * The animator's clock: a step index 0…N over the timeline, autoplay at a speed, and phase
 * jumps. Like Python Tutor's ExecutionVisualizer it holds only the index; whoever listens
 * redraws from the timeline at that index. Stepping or scrubbing pauses autoplay.
 */
export const BASE_STEP_MS = 300;

export class Player {
  constructor(onChange) {
    this.onChange = onChange;
    this.k = 0;
    this.N = 0;
    this.segments = [];
    this.playing = false;
    this.speed = 1;
    this._timer = 0;
  }

  reset(N, segments, k = N) {
    this.pause();
    this.N = N;
    this.segments = segments;
    this.go(k);
  }

  get intervalMs() { return BASE_STEP_MS / this.speed; }

  go(k, { animate = false, fromUser = false } = {}) {
    if (fromUser) this.pause();
    this.k = Math.max(0, Math.min(this.N, k));
    this.onChange(this.k, { animate, playing: this.playing });
  }

  step(d) { this.go(this.k + d, { animate: d === 1, fromUser: true }); }

  play() {
    if (this.playing || this.N === 0) return;
    if (this.k >= this.N) this.go(0);
    this.playing = true;
    this.onChange(this.k, { animate: false, playing: true });
    const tick = () => {
      if (!this.playing) return;
      if (this.k >= this.N) { this.pause(); return; }
      this.go(this.k + 1, { animate: true });
      this._timer = setTimeout(tick, this.intervalMs);
    };
    this._timer = setTimeout(tick, this.intervalMs);
  }

  pause() {
    if (!this.playing) return;
    this.playing = false;
    clearTimeout(this._timer);
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
