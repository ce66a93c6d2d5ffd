/**
 * Canvas colours, read from the page's CSS custom properties (static/app.css), so the graph
 * follows the light/dark theme the system asks for.
 */
const KINDS = ["function", "acc", "leaf", "output", "retained", "cut", "group"];

export function palette(el = document.documentElement) {
  const css = getComputedStyle(el);
  const v = (name, fallback) => (css.getPropertyValue(name).trim() || fallback);
  const kinds = {};
  for (const k of KINDS) {
    kinds[k] = { fill: v(`--gt-${k}-fill`, "#eee"), stroke: v(`--gt-${k}-stroke`, "#888"),
      text: v("--gt-node-text", "#111"), sub: v("--gt-node-sub", "#555") };
  }
  return {
    kinds,
    bg: v("--gt-canvas", "#fff"), edge: v("--gt-edge", "#99a"), text: v("--gt-text", "#111"),
    labelBg: v("--gt-label-bg", "rgba(255,255,255,.85)"), box: v("--gt-box", "rgba(100,100,160,.06)"),
    boxStroke: v("--gt-box-stroke", "#889"), boxText: v("--gt-box-text", "#556"),
    gradPos: v("--gt-grad-pos", "#d9480f"), gradNeg: v("--gt-grad-neg", "#1c7ed6"), gradZero: v("--gt-grad-zero", "#888"),
    current: v("--gt-current", "#e6007a"), justDone: v("--gt-just-done", "#f7a8cf"),
    selected: v("--gt-selected", "#111"), lineSel: v("--gt-line-sel", "#f59f00"), error: v("--gt-error", "#e03131"), suspect: v("--gt-suspect", "#c2255c"),
    reached: v("--gt-reached", "#d9480f"), reachedOld: v("--gt-reached-old", "#c9b8a8"),
    cut: v("--gt-cut-stroke", "#888"), mini: v("--gt-mini", "#f4f4f8"),
    higher: v("--gt-higher-order", "#7048e8"), higher2: v("--gt-higher-order-2", "#0c8599"),
  };
}
