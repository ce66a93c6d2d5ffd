/**
 * The transport bar: ⏮ ‹ ▶/⏸ › ⏭, "Step k/N · phase", a scrubber with labelled phase
 * segments, and the speed. Plain DOM over a Player; all controls are labelled buttons.
 */
export class Transport {
  constructor(root, player) {
    this.player = player;
    this.root = root;
    const q = (s) => root.querySelector(`[data-gt="${s}"]`);
    this.btn = { start: q("tl-start"), back: q("tl-back"), play: q("tl-play"), fwd: q("tl-fwd"), end: q("tl-end") };
    this.label = q("tl-label");
    this.scrub = q("tl-scrub");
    this.segBar = q("tl-segments");
    this.speed = q("tl-speed");
    this.btn.start.addEventListener("click", () => player.phaseBack());
    this.btn.back.addEventListener("click", () => player.step(-1));
    this.btn.play.addEventListener("click", () => player.toggle());
    this.btn.fwd.addEventListener("click", () => player.step(1));
    this.btn.end.addEventListener("click", () => player.phaseForward());
    this.scrub.addEventListener("input", () => player.go(Number(this.scrub.value), { fromUser: true }));
    this.speed.addEventListener("change", () => { player.speed = Number(this.speed.value); });
  }

  setSegments(segments, N) {
    this.segBar.replaceChildren();
    for (const s of segments) {
      const el = document.createElement("button");
      el.type = "button";
      el.className = `tl-seg tl-${s.phase}`;
      el.style.left = `${((s.start - 1) / Math.max(N, 1)) * 100}%`;
      el.style.width = `${((s.end - s.start + 1) / Math.max(N, 1)) * 100}%`;
      el.textContent = s.label;
      el.title = `${s.label}: steps ${s.start}–${s.end}`;
      el.setAttribute("aria-label", `Jump to ${s.label} (steps ${s.start} to ${s.end})`);
      el.addEventListener("click", () => this.player.go(s.start, { fromUser: true }));
      this.segBar.append(el);
    }
    this.scrub.max = String(N);
  }

  update(k, N, playing, segment) {
    this.scrub.value = String(k);
    this.scrub.setAttribute("aria-valuetext", `step ${k} of ${N}`);
    const phase = k === 0 ? "start" : segment ? segment.label : "";
    this.label.textContent = `Step ${k}/${N}${phase ? ` · ${phase}` : ""}`;
    this.btn.play.textContent = playing ? "⏸" : "▶";
    this.btn.play.setAttribute("aria-label", playing ? "Pause" : "Play");
    this.btn.back.disabled = k <= 0;
    this.btn.start.disabled = k <= 0;
    this.btn.fwd.disabled = k >= N;
    this.btn.end.disabled = k >= N;
    this.btn.play.disabled = N === 0;
  }
}
