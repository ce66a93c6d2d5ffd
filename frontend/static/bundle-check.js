// If the bundle is missing (a checkout where `make frontend` has not run), say so plainly.
// A file, not an inline script: the page's Content-Security-Policy allows no inline script
// (NOTE [security headers] in backend/gradtrace/api/security.py).
window.addEventListener("load", () => {
  if (window.gradtrace) return;
  const p = document.getElementById("graph-empty");
  if (p) p.textContent = "The page's script (/dist/app.js) did not load. In a checkout, run `make frontend` (npm ci && npm run build in frontend/).";
});
