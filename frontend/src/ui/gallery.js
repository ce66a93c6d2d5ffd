/** The lesson gallery's DOM: one button per lesson (backend/gradtrace/lessons), its title and introduction. */
export function renderGallery(list, examples, onPick) {
  for (const ex of examples) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "gt-example";
    const t = document.createElement("strong");
    t.textContent = ex.title;
    const d = document.createElement("span");
    d.textContent = ex.intro;
    b.append(t, d);
    b.addEventListener("click", () => onPick(ex));
    li.append(b);
    list.append(li);
  }
}
