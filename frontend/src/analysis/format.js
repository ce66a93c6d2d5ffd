/**
 * How tensor values read on screen. The formatting itself lives in graph/values.js (the
 * renderer needs it too, and render/ does not depend on ui/); the panels import it from here.
 */
/**
 * NOTE [numbered from 1]: the document numbers backward passes from 0 (`pass`, `Pass.index`,
 * `created_in_pass`: docs/CONTRACT.md); what a person reads numbers them from 1, like loop
 * iterations ("backward 8 (iteration 8 of 50)"). Every label goes through passNo.
 */
export const passNo = (p) => p + 1;

export { fmtBytes, fmtNum, fmtTensorLong, fmtTensorShort, gradMagnitude, numel } from "../graph/values.js";
