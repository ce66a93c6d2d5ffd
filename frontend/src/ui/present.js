/**
 * Presentation (focus) mode for a projector: the code pane and the inspector collapse to a
 * narrow strip each, so the graph, the timeline and the sentence take the screen, with larger
 * type (static/app.css, NOTE [presentation mode]) and Fit at a larger zoom. It is part of the
 * page's address (`?mode=present`), so a share link opens in it.
 */

const STRIP_TEXT = { code: "Code ▸", inspector: "◂ Inspector" };

/**
 * @param {{button: HTMLButtonElement, panes: {code: HTMLElement, inspector: HTMLElement},
 *          canvas: {textScale: number, fit: Function}}} parts
 * @returns {{set: (on: boolean) => void, on: () => boolean}}
 */
export function presentationMode({ button, panes, canvas }) {
  const body = document.body;
  const strips = Object.entries(panes).filter(([, el]) => el).map(([name, el]) => {
    const strip = document.createElement("button");
    strip.type = "button";
    strip.className = "gt-strip";
    strip.textContent = STRIP_TEXT[name];
    strip.setAttribute("aria-label", `Show the ${name} (leave presentation mode)`);
    strip.addEventListener("click", () => set(false));
    el.prepend(strip);
    return strip;
  });
  const set = (on) => {
    if (on) body.dataset.present = "1"; else delete body.dataset.present;
    button.setAttribute("aria-pressed", String(on));
    button.textContent = on ? "Leave presentation" : "Present";
    for (const s of strips) s.tabIndex = on ? 0 : -1;
    canvas.textScale = on ? PRESENT_SCALE : 1;
    const url = new URL(location.href);
    if (on) url.searchParams.set("mode", "present"); else url.searchParams.delete("mode");
    history.replaceState(history.state, "", url);
    // The graph's column changed size: frame it again once the layout has settled.
    requestAnimationFrame(() => canvas.fit());
  };
  button.addEventListener("click", () => set(!body.dataset.present));
  set(new URL(location.href).searchParams.get("mode") === "present");
  return { set, on: () => !!body.dataset.present };
}

/** How much larger the type is in presentation mode (the page's CSS and Fit's zoom). */
export const PRESENT_SCALE = 1.3;
