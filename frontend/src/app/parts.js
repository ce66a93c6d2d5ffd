/** The element marked `data-gt="name"` inside root (or root itself), or null (NOTE [mountable viewer] in app/viewer.js). */
export function part(root, name) {
  if (root.dataset && root.dataset.gt === name) return root;
  return root.querySelector(`[data-gt="${name}"]`);
}
