/**
 * Keys of the graph panel. They act only while the panel has focus (never while typing in
 * the editor, research §4): Space play/pause, ←/→ step, Shift+←/→ phase, Home/End, +/−/f zoom.
 */
export function graphKeyHandler(player, canvas) {
  return (ev) => {
    const keys = {
      " ": () => player.toggle(),
      ArrowRight: () => (ev.shiftKey ? player.phaseForward() : player.step(1)),
      ArrowLeft: () => (ev.shiftKey ? player.phaseBack() : player.step(-1)),
      Home: () => player.go(0, { fromUser: true }),
      End: () => player.go(player.N, { fromUser: true }),
      "+": () => canvas.zoomBy(1.25),
      "-": () => canvas.zoomBy(0.8),
      f: () => canvas.fit(),
    };
    const fn = keys[ev.key];
    if (!fn || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    ev.preventDefault();
    fn();
  };
}
