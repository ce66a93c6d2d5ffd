/** Small iterative DAG helpers for the layout (no recursion: worker stacks are small). */

/** Compressed adjacency: for node v, neighbours are adj[start[v] .. start[v+1]). */
export function csr(n, from, to) {
  const start = new Int32Array(n + 1);
  for (let e = 0; e < from.length; e++) start[from[e] + 1]++;
  for (let v = 0; v < n; v++) start[v + 1] += start[v];
  const fill = start.slice(0, n);
  const adj = new Int32Array(from.length);
  for (let e = 0; e < from.length; e++) adj[fill[from[e]]++] = to[e];
  return { start, adj };
}

/** Iterative DFS in creation order; edges to a node still on the stack are back edges. */
export function breakCycles(n, us, vs) {
  const m = us.length;
  const start = new Int32Array(n + 1);
  for (let e = 0; e < m; e++) start[us[e] + 1]++;
  for (let v = 0; v < n; v++) start[v + 1] += start[v];
  const fill = start.slice(0, n);
  const out = new Int32Array(m);
  for (let e = 0; e < m; e++) out[fill[us[e]]++] = e;
  const state = new Uint8Array(n);
  const reversed = new Uint8Array(m);
  const stack = new Int32Array(n), iter = new Int32Array(n);
  for (let root = 0; root < n; root++) {
    if (state[root]) continue;
    let sp = 0;
    stack[sp] = root; iter[sp] = start[root]; state[root] = 1; sp++;
    while (sp > 0) {
      const v = stack[sp - 1];
      if (iter[sp - 1] < start[v + 1]) {
        const e = out[iter[sp - 1]++];
        const w = vs[e];
        if (state[w] === 1) reversed[e] = 1;
        else if (state[w] === 0) { state[w] = 1; stack[sp] = w; iter[sp] = start[w]; sp++; }
      } else { state[v] = 2; sp--; }
    }
  }
  return reversed;
}
