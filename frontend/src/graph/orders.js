/**
 * The derivative order of each node: 0 for the forward graph, 1 for a graph built by a backward
 * with create_graph=True over it (du/dx of a PINN, the inner gradient of MAML), 2 for one built
 * by a backward over that (d²u/dx²), and so on. Pure, from the document's events.
 *
 * NOTE [derivative order]: a node built during pass p (`created_in_pass`) differentiates what
 * pass p had traversed up to then, so its order is one more than the highest order among the
 * nodes pass p's backward steps visited before it. Only the page needs it (the document keeps
 * `created_in_pass`, the fact), so it is computed here and nowhere else.
 */
export function derivativeOrders(index) {
  if (index._orders) return index._orders;
  const order = new Uint8Array(index.nodes.length);
  const passMax = new Map();
  for (const e of index.doc.events || []) {
    const v = index.idx.get(e.node);
    if (v === undefined) continue;
    if (e.phase === "backward") {
      const p = e.pass ?? 0;
      passMax.set(p, Math.max(passMax.get(p) ?? 0, order[v]));
    } else {
      const p = index.nodes[v].created_in_pass;
      if (p != null) order[v] = Math.min(255, Math.max(order[v], (passMax.get(p) ?? 0) + 1));
    }
  }
  // Nodes built by a pass but never seen as a forward event still count as built.
  index.nodes.forEach((n, v) => { if (n.created_in_pass != null && !order[v]) order[v] = 1; });
  index._orders = order;
  return order;
}
