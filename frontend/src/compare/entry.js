/**
 * The playground's way into the compare page: "Compare" shares the run on show and opens
 * /c/{it}..{it}, where the presets (another seed, edited code, CUDA, checkpointing off) and
 * the what-if slider make run B.
 */
import { compareLink, shareDocument } from "../api.js";

export function installCompareButton(button, getDoc) {
  button.addEventListener("click", async () => {
    const doc = getDoc();
    if (!doc) return;
    button.disabled = true;
    try {
      const share = await shareDocument(doc);
      const link = await compareLink({ share_id: share.id }, { share_id: share.id });
      location.assign(new URL(link.url).pathname);
    } catch (err) {
      button.disabled = false;
      button.title = `Could not open the comparison: ${err.message}`;
    }
  });
}
