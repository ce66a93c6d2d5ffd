// What a person sees on a page: NOTE [what a person sees] in tests/browser/seen.py.
// Evaluated by seen.py as one function; answers the measurements it names.
() => {
  const vw = innerWidth, vh = innerHeight;
  const docScrollsX = document.documentElement.scrollWidth > vw + 1;
  const docScrollsY = document.documentElement.scrollHeight > vh + 1;
  const inter = (a, b) => ({ x0: Math.max(a.x0, b.x0), y0: Math.max(a.y0, b.y0), x1: Math.min(a.x1, b.x1), y1: Math.min(a.y1, b.y1) });
  const empty = (r) => r.x1 - r.x0 <= 0.5 || r.y1 - r.y0 <= 0.5;
  const box = (r) => ({ x0: r.left, y0: r.top, x1: r.right, y1: r.bottom });
  const name = (el) => {
    const id = el.id ? '#' + el.id : '';
    const cls = typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).slice(0, 2).join('.') : '';
    return el.tagName.toLowerCase() + id + cls;
  };
  const view = { x0: docScrollsX ? -1e9 : 0, y0: docScrollsY ? -1e9 : 0, x1: docScrollsX ? 1e9 : vw, y1: docScrollsY ? 1e9 : vh };
  const texts = [], cut = [];
  const SKIP = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'TITLE', 'NOSCRIPT', 'OPTION', 'TEXTAREA', 'CANVAS', 'SVG', 'svg']);
  const walk = (el, hard, seen, scrolled) => {
    if (SKIP.has(el.tagName)) return;
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || /^rect\(0(px)?,? 0/.test(cs.clip)) return;
    if (el.tagName === 'DIALOG' && !el.open) return;
    const r = el.getBoundingClientRect();
    const own = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim());
    if (own.length && el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true }) && r.width > 1 && r.height > 1) {
      const lines = [];
      for (const n of own) {
        const range = document.createRange();
        range.selectNodeContents(n);
        for (const q of range.getClientRects()) if (q.width > 0.5 && q.height > 0.5) lines.push(box(q));
      }
      const text = own.map((n) => n.textContent.trim()).join(' ').slice(0, 60);
      const hidesX = /hidden|clip/.test(cs.overflowX), hidesY = /hidden|clip/.test(cs.overflowY);
      const ellipsis = cs.textOverflow === 'ellipsis' && (el.title || el.getAttribute('aria-label') || '').includes(text.replace(/…$/, '').slice(0, 20));
      if ((hidesX && el.scrollWidth > el.clientWidth + 1 && !ellipsis) || (hidesY && el.scrollHeight > el.clientHeight + 1))
        cut.push(`${name(el)} "${text}": its text needs ${el.scrollWidth}×${el.scrollHeight} px, its box shows ${el.clientWidth}×${el.clientHeight}`);
      if (!scrolled) for (const q of lines) {
        const v = inter(q, hard);
        if (!empty(v) && (v.x1 - v.x0 < q.x1 - q.x0 - 1.5 || v.y1 - v.y0 < q.y1 - q.y0 - 1.5)) {
          cut.push(`${name(el)} "${text}": a line at ${Math.round(q.x0)},${Math.round(q.y0)}–${Math.round(q.x1)},${Math.round(q.y1)} is cut at ${Math.round(hard.x0)},${Math.round(hard.y0)}–${Math.round(hard.x1)},${Math.round(hard.y1)}`);
          break;
        }
      }
      const visible = lines.map((q) => inter(q, seen)).filter((q) => !empty(q));
      if (visible.length) texts.push({ el, name: name(el), text, rects: visible });
    }
    let h2 = hard, s2 = seen, sc = scrolled;
    const clipsX = cs.overflowX !== 'visible', clipsY = cs.overflowY !== 'visible';
    if (clipsX || clipsY) {
      const mine = { x0: clipsX ? r.left : -1e9, y0: clipsY ? r.top : -1e9, x1: clipsX ? r.right : 1e9, y1: clipsY ? r.bottom : 1e9 };
      s2 = inter(seen, mine);
      if (/auto|scroll/.test(cs.overflowX + cs.overflowY)) sc = true;
      else h2 = inter(hard, mine);
    }
    for (const kid of el.shadowRoot ? el.shadowRoot.children : el.children) walk(kid, h2, s2, sc);
  };
  walk(document.documentElement, view, view, false);
  const overlaps = [];
  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
    const a = texts[i], b = texts[j];
    if (a.el.contains(b.el) || b.el.contains(a.el)) continue;
    const hit = a.rects.some((p) => b.rects.some((q) => { const x = inter(p, q); return x.x1 - x.x0 > 1 && x.y1 - x.y0 > 1; }));
    if (hit) overlaps.push(`${a.name} "${a.text}" and ${b.name} "${b.text}"`);
  }
  // The graphs: every viewer's canvas on the page.
  const g = window.gradtrace || {};
  const views = [g.app && g.app.canvas, g.viewer && g.viewer.canvas,
                 g.page && g.page.panes && g.page.panes.a.canvas, g.page && g.page.panes && g.page.panes.b.canvas].filter(Boolean);
  const graphs = views.map((c) => {
    const el = c.base, r = el.getBoundingClientRect();
    const d = el.getContext('2d').getImageData(0, 0, el.width, el.height).data;
    const counts = new Map();
    for (let i = 0; i < d.length; i += 4 * 97) { const key = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2]; counts.set(key, (counts.get(key) || 0) + 1); }
    const bg = [...counts.entries()].sort((p, q) => q[1] - p[1])[0][0];
    const [br, bgc, bb] = [bg >> 16, (bg >> 8) & 255, bg & 255];
    let ink = 0, x0 = 1e9, y0 = 1e9, x1 = -1, y1 = -1;
    const step = 2;
    for (let y = 0; y < el.height; y += step) for (let x = 0; x < el.width; x += step) {
      const i = 4 * (y * el.width + x);
      if (Math.abs(d[i] - br) + Math.abs(d[i + 1] - bgc) + Math.abs(d[i + 2] - bb) > 30) {
        ink++; if (x < x0) x0 = x; if (x > x1) x1 = x; if (y < y0) y0 = y; if (y > y1) y1 = y;
      }
    }
    const sx = r.width / el.width, sy = r.height / el.height;
    const drawn = ink ? { x0: r.left + x0 * sx, y0: r.top + y0 * sy, x1: r.left + (x1 + 1) * sx, y1: r.top + (y1 + 1) * sy } : null;
    const placed = (c.placed || []).map((p) => ({ text: p.text, kind: p.kind, clip: p.clip, bg: !!p.bg, x0: p.x, y0: p.y, x1: p.x + p.w, y1: p.y + p.h }));
    const w = r.width, h = r.height;
    const outside = placed.filter((p) => p.x0 < -0.5 || p.y0 < -0.5 || p.x1 > w + 0.5 || p.y1 > h + 0.5)
      .map((p) => `"${p.text}" (${p.kind}) at ${Math.round(p.x0)},${Math.round(p.y0)}–${Math.round(p.x1)},${Math.round(p.y1)} of ${Math.round(w)}×${Math.round(h)}`);
    const labelOverlaps = [];
    for (let i = 0; i < placed.length; i++) for (let j = i + 1; j < placed.length; j++) {
      const x = inter(placed[i], placed[j]);
      if (x.x1 - x.x0 > 1 && x.y1 - x.y0 > 1) labelOverlaps.push(`"${placed[i].text}" and "${placed[j].text}"`);
    }
    const margin = ink ? Math.min(x0, y0, el.width - 1 - x1, el.height - 1 - y1) * Math.min(sx, sy) : null;
    // What the canvas draws under its texts, in the canvas's CSS px: node boxes, module box
    // outlines and edges drawn at this step.
    const s = c.scene, cam = c.cam, K = cam.k, at = c.k;
    const X = (wx) => (wx - cam.x) * K, Y = (wy) => (wy - cam.y) * K;
    const onCanvas = (q) => q.x1 > 0 && q.y1 > 0 && q.x0 < w && q.y0 < h;
    const nodes = [], outlines = [], edges = [];
    if (s) {
      s.view.vnodes.forEach((n, v) => {
        if (!(s.reveal[v] <= at)) return;
        const q = { v, text: n.label, x0: X(s.x[v] - n.w / 2), y0: Y(s.y[v] - n.h / 2), x1: X(s.x[v] + n.w / 2), y1: Y(s.y[v] + n.h / 2) };
        if (onCanvas(q)) nodes.push(q);
      });
      for (const b of s.boxes || []) {
        if (!(b.reveal <= at) || !b.poly) continue;
        const pts = [];
        for (let i = 0; i < b.poly.length; i += 2) pts.push(X(b.poly[i]), Y(b.poly[i + 1]));
        outlines.push({ name: b.title || b.path, pts, x0: X(b.x0), y0: Y(b.y0), x1: X(b.x1), y1: Y(b.y1) });
      }
      s.view.vedges.forEach((e, k) => {
        if (!(s.edgeReveal[k] <= at)) return;
        const p = s.layout.points[k] && s.layout.points[k].length >= 4 ? s.layout.points[k] : [s.x[e.s], s.y[e.s], s.x[e.t], s.y[e.t]];
        const pts = [];
        for (let i = 0; i < p.length; i += 2) pts.push(X(p[i]), Y(p[i + 1]));
        edges.push(pts);
      });
    }
    // Whether a polyline (closed: a box outline) runs through a rectangle shrunk by 1 px.
    const crosses = (pts, q, closed) => {
      const a = { x0: q.x0 + 1, y0: q.y0 + 1, x1: q.x1 - 1, y1: q.y1 - 1 };
      const inside = (x, y) => x > a.x0 && x < a.x1 && y > a.y0 && y < a.y1;
      const n = pts.length / 2;
      for (let i = 0; i < (closed ? n : n - 1); i++) {
        let [px, py] = [pts[2 * i], pts[2 * i + 1]];
        const j = (i + 1) % n, qx = pts[2 * j], qy = pts[2 * j + 1];
        for (let t = 0; t <= 16; t++) if (inside(px + (qx - px) * t / 16, py + (qy - py) * t / 16)) return true;
      }
      return false;
    };
    // A module's title, an edge's label or a node's text over the drawn graph: a node box not its
    // own, an edge (titles only: an edge's label sits on its edge, on a background), the outline of
    // a module box other than its own.
    const covered = [];
    const own = (p, o) => p.clip && Math.abs(X(p.clip[0]) - o.x0) < 0.5 && Math.abs(Y(p.clip[1]) - o.y0) < 0.5
      && Math.abs(X(p.clip[2]) - o.x1) < 0.5 && Math.abs(Y(p.clip[3]) - o.y1) < 0.5;
    for (const p of placed) {
      if (p.kind === "title" || p.kind === "edge") {
        for (const q of nodes) {
          const x = inter(p, q);
          if (x.x1 - x.x0 > 1 && x.y1 - x.y0 > 1) { covered.push(`${p.kind} "${p.text}" covers the box of ${q.text}`); break; }
        }
      }
      // (a title drawn on its own background hides the lines under it: none runs through its text)
      if (p.kind === "title" && !p.bg) {
        if (edges.some((pts) => crosses(pts, p, false))) covered.push(`an edge crosses the title "${p.text}"`);
        for (const o of outlines) if (!own(p, o) && crosses(o.pts, p, true)) { covered.push(`the title "${p.text}" runs into the box of ${o.name}`); break; }
      }
    }
    const boxOverlaps = [];
    for (let i = 0; i < nodes.length; i++) for (let j = i + 1; j < nodes.length; j++) {
      const x = inter(nodes[i], nodes[j]);
      if (x.x1 - x.x0 > 1 && x.y1 - x.y0 > 1) boxOverlaps.push(`${nodes[i].text} and ${nodes[j].text}`);
    }
    return { canvas: box(r), drawn, margin, ink: ink / Math.ceil(el.width / step) / Math.ceil(el.height / step), labels: placed.length, outside, labelOverlaps,
             covered, boxOverlaps };
  });
  return { viewport: [vw, vh], texts: texts.length, cut, overlaps, graphs };
}
