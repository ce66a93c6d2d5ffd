/**
 * Custom autograd.Functions: the user's own code inside the graph. Autograd names their nodes
 * after the class (`CubeBackward`), where built-in nodes end in a number (`MulBackward0`); the
 * same rule is written for the web process in backend/gradtrace/analysis/gradcheck/runs.py.
 */

const BUILTIN = /Backward\d+$/;
const NOT_USER = new Set(["CompiledFunctionBackward", "CheckpointFunctionBackward"]);

/**
 * A node of a user-defined autograd.Function. With the snippet's `code`, only a Function whose
 * class the code defines: torch makes nodes named so too (`UndefinedGradBackward` inside
 * torch.autograd.gradcheck), and those are not the user's code.
 */
export function isCustomFunction(node, code) {
  const name = node && node.name ? String(node.name) : "";
  const named = !!node && node.kind === "function" && name.endsWith("Backward") && !BUILTIN.test(name) && !NOT_USER.has(name);
  return named && (typeof code !== "string" || definedIn(code, name));
}

/** Does `code` define `class <Name>` for the node `<Name>Backward`? */
export function definedIn(code, nodeName) {
  const cls = String(nodeName).replace(/Backward$/, "").replace(/[^\w]/g, "");
  return new RegExp(`^\\s*class\\s+${cls}\\b`, "m").test(code);
}

const indentOf = (line) => line.length - line.trimStart().length;

/**
 * The 1-based lines of `def backward` in `class <Name>` of the snippet (its `def` line and its
 * body), for the node `<Name>Backward`; [] when the class is not in the code (imported).
 */
export function backwardLines(code, nodeName) {
  const cls = String(nodeName).replace(/Backward$/, "");
  const lines = String(code || "").split("\n");
  const classRe = new RegExp(`^(\\s*)class\\s+${cls.replace(/[^\w]/g, "")}\\b`);
  for (let i = 0; i < lines.length; i++) {
    const m = classRe.exec(lines[i]);
    if (!m) continue;
    const classIndent = m[1].length;
    for (let j = i + 1; j < lines.length; j++) {
      const t = lines[j];
      if (t.trim() && indentOf(t) <= classIndent) break; // the class ended
      if (!/^\s*def\s+backward\s*\(/.test(t)) continue;
      const defIndent = indentOf(t);
      const out = [j + 1];
      for (let k = j + 1; k < lines.length; k++) {
        const b = lines[k];
        if (b.trim() && indentOf(b) <= defIndent) break;
        if (b.trim()) out.push(k + 1);
      }
      return out;
    }
  }
  return [];
}
