// NOTE [saved file policy]
//     The saved HTML file (static/standalone.html, filled by src/export-html.js and by
//     backend/gradtrace/notebook/html.py) opens from disk with no server, so no header can
//     protect it: it carries its own Content-Security-Policy in a <meta> tag. Its one script
//     and the template's <style> are inline, so the policy names each by its SHA-256 instead
//     of allowing inline code; the viewer's CSS needs no allowance, as src/embed.js adopts it
//     in its shadow root as a constructed style sheet (NOTE [styles under the policy] in
//     backend/gradtrace/api/security.py). Nothing else may load: no remote origin, no eval,
//     and only blob: for the layout worker and data:/blob: for images.
//     The hashes are of the exact text the fillers insert (the script with "</script"
//     escaped), computed once here, at build time, and written to dist/standalone-csp.txt.
import { createHash } from "node:crypto";

const sha256 = (text) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

/** The text both fillers put in the file for @SCRIPT@. */
export const inlineScript = (bundle) => bundle.replaceAll("</script", "<\\/script");

/** The saved file's policy for the standalone bundle `bundle` and template `template`. */
export function standalonePolicy({ bundle, template }) {
  const style = template.match(/<style>([\s\S]*?)<\/style>/);
  if (!style) throw new Error("standalone-csp.mjs: static/standalone.html has no <style> element");
  return ["default-src 'none'", `script-src ${sha256(inlineScript(bundle))}`,
    `style-src ${sha256(style[1])}`, "img-src data: blob:", "worker-src blob:",
    "base-uri 'none'", "form-action 'none'", "object-src 'none'"].join("; ");
}
