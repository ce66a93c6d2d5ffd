/**
 * How tensor values read on screen. The formatting itself lives in graph/values.js (the
 * renderer needs it too, and render/ does not depend on ui/); the panels import it from here.
 */
export { fmtBytes, fmtNum, fmtTensorLong, fmtTensorShort, gradMagnitude, numel } from "../graph/values.js";
