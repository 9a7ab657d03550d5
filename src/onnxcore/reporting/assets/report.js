// onnxcore report: pan and zoom, expansion in place, search, the node panel, findings links, heat colours.
// Plain script, no library, nothing fetched.
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const data = JSON.parse(document.getElementById("data").textContent);
  const info = data.info;
  const canvas = document.getElementById("canvas");
  const viewport = document.getElementById("viewport");
  const panel = document.getElementById("panel");
  const view = { x: 0, y: 0, k: 1 };
  const PAD = 12, HEAD = 16;

  function apply() {
    viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    canvas.classList.toggle("far", view.k < 0.45);  // edge labels too small to read are not drawn
  }
  function rootDrawing() { return viewport.querySelector("g.drawing"); }
  // The whole drawing in view; or (``whole`` false, the first view) a drawing too tall to read whole is shown
  // from its top at the width of the stage (at most 1:1).
  function fit(whole) {
    const d = rootDrawing();
    const w = +d.dataset.w, h = +d.dataset.h;
    const r = canvas.getBoundingClientRect();
    let k = Math.min(1.5, Math.max(0.01, Math.min(r.width / w, r.height / h)));
    if (!whole && k < 0.35) k = Math.max(k, Math.min(1, r.width / w, 0.35 * r.width / Math.min(w, 600)));
    view.k = k;
    view.x = Math.max((r.width - w * k) / 2, Math.min(0, r.width - w * k));
    view.y = h * k <= r.height ? (r.height - h * k) / 2 : 0;
    apply();
  }

  // ---- pan and zoom -----------------------------------------------------------------------
  let drag = null;
  canvas.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, vx: view.x, vy: view.y, moved: false };
  });
  window.addEventListener("pointermove", (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (drag.moved) { view.x = drag.vx + dx; view.y = drag.vy + dy; apply(); }
  });
  window.addEventListener("pointerup", () => { setTimeout(() => { drag = null; }, 0); });
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    const mx = ev.clientX - r.left, my = ev.clientY - r.top;
    const f = Math.exp(-ev.deltaY * 0.0015);
    const k = Math.min(8, Math.max(0.01, view.k * f));
    view.x = mx - (mx - view.x) * (k / view.k);
    view.y = my - (my - view.y) * (k / view.k);
    view.k = k;
    apply();
  }, { passive: false });
  document.getElementById("fit").addEventListener("click", () => fit(true));
  document.getElementById("reset").addEventListener("click", () => { view.k = 1; view.x = 0; view.y = 0; apply(); });

  // ---- geometry of boxes and edges ----------------------------------------------------------
  const nums = (s) => s.split(",").map(Number);
  const boxOf = (g) => nums(g.dataset.b);
  function extentOf(g) {  // the space a box takes: its frame when expanded
    const b = boxOf(g);
    return g.dataset.e ? nums(g.dataset.e) : [b[2], b[3]];
  }
  function moveBox(g, dx, dy) {
    const b = boxOf(g);
    b[0] += dx; b[1] += dy;
    g.dataset.b = b.join(",");
    g.setAttribute("transform", `translate(${b[0]},${b[1]})`);
    const fr = g.frameEl;
    if (fr) fr.setAttribute("transform", `translate(${b[0]},${b[1]})`);
  }
  function boxes(drawing) { return drawing.querySelector(":scope > g.nodes").querySelectorAll(":scope > g[data-b]"); }

  // The box ``node`` of ``drawing`` takes (ow, oh) -> (nw, nh): what lies right of it or below it moves over.
  function resize(drawing, node, ow, oh, nw, nh) {
    const b = boxOf(node);
    const right = b[0] + ow, bottom = b[1] + oh, dw = nw - ow, dh = nh - oh, eps = 0.01;
    const shift = new Map();
    for (const g of boxes(drawing)) {
      if (g === node) { shift.set(g.dataset.id, [0, dh]); continue; }
      // Boxes right of it move right, boxes below it move down (those beside it in its row stay in the row):
      // a translation monotone in x and in y, so boxes apart stay apart.
      const gb = boxOf(g);
      const sx = gb[0] > right - eps ? dw : 0;
      const sy = gb[1] > bottom - eps ? dh : 0;
      shift.set(g.dataset.id, [sx, sy]);
      if (sx || sy) moveBox(g, sx, sy);
    }
    const pt = (x, y) => [x > right + eps ? x + dw : x, y > bottom - eps ? y + dh : y];
    for (const p of drawing.querySelectorAll(":scope > g.edges > path")) {
      const pts = p.dataset.p.split(" ").map(nums);
      // Edges leave an expanded node from its frame's bottom and enter it at its top, where they were.
      const s = shift.get(p.dataset.s) || [0, 0];
      const t = p.dataset.t === node.dataset.id ? [0, 0] : shift.get(p.dataset.t) || [0, 0];
      const out = pts.map(([x, y], i) => (i === 0 ? [x + s[0], y + s[1]]
        : i === pts.length - 1 ? [x + t[0], y + t[1]] : pt(x, y)));
      p.dataset.p = out.map((q) => q.join(",")).join(" ");
      p.setAttribute("d", "M" + out.map((q) => q.join(" ")).join(" L"));
    }
    for (const t of drawing.querySelectorAll(":scope > g.labels > text")) {
      const s = shift.get(t.dataset.s) || [0, 0];
      const [x, y] = nums(t.dataset.p);
      t.dataset.p = `${x + s[0]},${y + s[1]}`;
      t.setAttribute("x", x + s[0]); t.setAttribute("y", y + s[1]);
    }
    drawing.dataset.w = Math.max(+drawing.dataset.w + dw, b[0] + nw + PAD);
    drawing.dataset.h = Math.max(+drawing.dataset.h + dh, b[1] + nh + PAD);
    relayoutParent(drawing);
  }

  // Place the drawings inside an expanded node's frame side by side; returns the frame's extent.
  function layoutFrame(node) {
    const fr = node.frameEl;
    const b = boxOf(node);
    let x = PAD, h = 0;
    for (const slot of fr.querySelectorAll(":scope > g.slot")) {
      const d = slot.querySelector(":scope > g.drawing");
      slot.setAttribute("transform", `translate(${x},${b[3] + 6})`);
      x += +d.dataset.w + PAD;
      h = Math.max(h, +d.dataset.h + HEAD);
    }
    const w = Math.max(b[2], x), fh = b[3] + 6 + h + PAD;
    const rect = fr.querySelector(":scope > rect.frame");
    rect.setAttribute("width", w); rect.setAttribute("height", fh);
    return [w, fh];
  }
  function relayoutParent(drawing) {
    const slot = drawing.parentNode;
    if (!slot || !slot.classList || !slot.classList.contains("slot")) return;
    const owner = slot.parentNode.ownerNode;
    const [ow, oh] = extentOf(owner);
    const [nw, nh] = layoutFrame(owner);
    owner.dataset.e = `${nw},${nh}`;
    resize(owner.closest("g.drawing"), owner, ow, oh, nw, nh);
  }

  function expand(node) {
    if (node.frameEl) return;
    const exp = node.querySelector(":scope > g.exp");
    const keys = exp.dataset.x.split(" "), caps = exp.dataset.c.split("|");
    const b = boxOf(node);
    const fr = document.createElementNS(NS, "g");
    fr.setAttribute("class", "frame-g");
    fr.setAttribute("transform", `translate(${b[0]},${b[1]})`);
    const rect = document.createElementNS(NS, "rect");
    rect.setAttribute("class", "frame");
    fr.appendChild(rect);
    keys.forEach((k, i) => {
      const tmpl = document.getElementById("d-" + k);
      if (!tmpl) return;
      const slot = document.createElementNS(NS, "g");
      slot.setAttribute("class", "slot");
      slot.innerHTML = `<text class="caption" x="0" y="10"></text>` + tmpl.textContent;
      slot.firstChild.textContent = caps[i] || "";
      const d = slot.querySelector(":scope > g.drawing");
      d.setAttribute("transform", `translate(0,${HEAD - 4})`);
      for (const p of d.querySelectorAll("path.edge:not([d])")) {  // folded drawings carry their points only
        p.setAttribute("d", "M" + p.dataset.p.split(" ").map((q) => q.replace(",", " ")).join(" L"));
      }
      fr.appendChild(slot);
    });
    fr.ownerNode = node;
    node.frameEl = fr;
    node.parentNode.insertBefore(fr, node);
    const [ow, oh] = extentOf(node);
    const [nw, nh] = layoutFrame(node);
    node.dataset.e = `${nw},${nh}`;
    exp.querySelector("text").textContent = "−";
    recolour(fr);
    resize(node.closest("g.drawing"), node, ow, oh, nw, nh);
  }
  function collapse(node) {
    const fr = node.frameEl;
    if (!fr) return;
    const [ow, oh] = extentOf(node);
    const b = boxOf(node);
    fr.remove();
    node.frameEl = null;
    delete node.dataset.e;
    node.querySelector(":scope > g.exp text").textContent = "+";
    resize(node.closest("g.drawing"), node, ow, oh, b[2], b[3]);
  }

  // ---- selection and the panel --------------------------------------------------------------
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }
  function rows(head, list) {
    if (!list || !list.length) return "<p class='none'>none</p>";
    return "<table><tr>" + head.map((h) => `<th>${esc(h)}</th>`).join("") + "</tr>" +
      list.map((r) => "<tr>" + r.map((c) => `<td>${esc(c)}</td>`).join("") + "</tr>").join("") + "</table>";
  }
  function show(key) {
    const d = info[key];
    if (!d) return;
    let h = "";
    if (d.kind === "node") {
      const bound = d.status === "schema"
        ? `${d.domain} ${d.op}, imported version ${d.imported}, bound to the definition since version ${d.since}`
        : d.status === "function" ? `model-local function ${d.function}` : `${d.status} (imported version ${d.imported})`;
      h += `<h3>${esc(d.op)} <small>${esc(d.name || "(unnamed)")}</small></h3>`;
      h += `<p class="loc">${esc(d.loc)}</p><p><b>bound:</b> ${esc(bound)}</p>`;
      if (d.time !== undefined) {
        h += `<p><b>time:</b> ${(d.time * 1e3).toFixed(3)} ms per run` +
          (d.fused_into ? " (fused into another node's step)" : "") +
          (d.fused ? `; this step fused ${esc(d.fused.join(", "))}` : "") + "</p>";
      } else if (d.not_a_step) {
        h += "<p><b>time:</b> none: not a step of the run's plan (folded when the plan was made, not needed by " +
          "an output, or computing nothing, as an Identity, whose readers read its input)</p>";
      }
      h += "<h4>Attributes</h4><div class='attrs'>" + rows(["name", "value"], d.attrs) + "</div>";
      h += "<h4>Inputs</h4><div class='inputs'>" + rows(["formal", "value", "type and shape", "from"], d.inputs) + "</div>";
      h += "<h4>Outputs</h4><div class='outputs'>" + rows(["formal", "value", "type and shape"], d.outputs) + "</div>";
      h += "<h4>Findings</h4>" + (d.findings.length ? "<ul class='nf'>" + d.findings.map((i) => {
        const f = data.findings[i];
        return `<li class="${esc(f.severity)}">${esc(f.code)}: ${esc(f.message)}</li>`;
      }).join("") + "</ul>" : "<p class='none'>none</p>");
    } else if (d.kind === "cluster") {
      h += `<h3>${esc(d.title)}</h3>` + rows(["operator", "nodes"], Object.entries(d.ops));
    } else {
      h += `<h3>${esc(d.kind)} ${esc(d.name)}</h3><p>${esc(d.type)}</p><p class="loc">${esc(d.scope)}</p>`;
    }
    panel.innerHTML = h;
  }
  function select(key) {
    for (const g of canvas.querySelectorAll("g.selected")) g.classList.remove("selected");
    for (const g of canvas.querySelectorAll(`g[data-id="${CSS.escape(key)}"]`)) g.classList.add("selected");
    show(key);
  }
  canvas.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const exp = ev.target.closest("g.exp");
    const box = ev.target.closest("g[data-id]");
    if (exp && box) { box.frameEl ? collapse(box) : expand(box); return; }
    if (box) select(box.dataset.id);
  });

  function reveal(key) {
    for (const c of info[key] && info[key].path ? info[key].path : []) {
      const g = canvas.querySelector(`g[data-id="${CSS.escape(c)}"]`);
      if (g && !g.frameEl && g.querySelector(":scope > g.exp")) expand(g);
    }
    const el = canvas.querySelector(`g[data-id="${CSS.escape(key)}"]`);
    if (!el) return null;
    const r = el.getBoundingClientRect(), s = canvas.getBoundingClientRect();
    if (view.k < 0.5) {
      const k = 0.8;
      view.x = (view.x - (r.left + r.width / 2 - s.left)) * (k / view.k) + (r.left + r.width / 2 - s.left);
      view.y = (view.y - (r.top + r.height / 2 - s.top)) * (k / view.k) + (r.top + r.height / 2 - s.top);
      view.k = k;
      apply();
    }
    const r2 = el.getBoundingClientRect();
    view.x += s.left + s.width / 2 - (r2.left + r2.width / 2);
    view.y += s.top + s.height / 2 - (r2.top + r2.height / 2);
    apply();
    return el;
  }

  // ---- findings -----------------------------------------------------------------------------
  for (const a of document.querySelectorAll("a.flink")) {
    a.addEventListener("click", (ev) => {
      ev.preventDefault();
      for (const g of canvas.querySelectorAll("g.outlined")) g.classList.remove("outlined");
      const el = reveal(a.dataset.node);
      if (el) { el.classList.add("outlined"); select(a.dataset.node); }
      document.getElementById("graph").scrollIntoView();
    });
  }

  // ---- search -------------------------------------------------------------------------------
  const index = Object.entries(info).map(([k, d]) => {
    const words = [d.name, d.op, d.loc, d.title];
    for (const r of d.inputs || []) words.push(r[1]);
    for (const r of d.outputs || []) words.push(r[1]);
    // Rank: a node named exactly so, then anything named so, then other nodes, then the rest.
    return [k, words.filter(Boolean).join("\n").toLowerCase(), (d.name || "").toLowerCase(), d.kind === "node" ? 1 : 0];
  });
  const rank = (q, e) => (e[2] === q ? 2 : 0) + e[3];
  const search = document.getElementById("search"), results = document.getElementById("results");
  const hits = document.getElementById("hits");
  function runSearch() {
    const q = search.value.trim().toLowerCase();
    for (const g of canvas.querySelectorAll("g.hit")) g.classList.remove("hit");
    results.innerHTML = "";
    if (!q) { hits.textContent = ""; return []; }
    const found = index.filter(([, text]) => text.includes(q))
      .sort((a, b) => rank(q, b) - rank(q, a));
    hits.textContent = `${found.length} found`;
    for (const [k] of found.slice(0, 60)) {
      const d = info[k];
      const btn = document.createElement("button");
      btn.type = "button";
      btn.className = "result";
      btn.dataset.id = k;
      btn.textContent = d.kind === "node" ? `${d.op} ${d.name || d.loc}` : `${d.kind} ${d.name || d.title}`;
      btn.addEventListener("click", () => { const el = reveal(k); if (el) { el.classList.add("hit"); select(k); } });
      results.appendChild(btn);
      for (const g of canvas.querySelectorAll(`g[data-id="${CSS.escape(k)}"]`)) g.classList.add("hit");
    }
    return found;
  }
  search.addEventListener("input", runSearch);
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { const first = results.querySelector("button"); if (first) first.click(); }
  });

  // ---- colours ------------------------------------------------------------------------------
  const times = Object.values(info).map((d) => d.time || 0);
  const tmax = Math.max(1e-12, ...times);
  const mode = document.getElementById("colour");
  function heat(t) {
    const u = Math.sqrt(Math.min(1, t / tmax));
    const lo = [255, 247, 188], hi = [215, 48, 31];
    return `rgb(${lo.map((c, i) => Math.round(c + (hi[i] - c) * u)).join(",")})`;
  }
  function recolour(root) {
    for (const g of root.querySelectorAll("g.node")) {
      const rect = g.querySelector(":scope > rect");
      const d = info[g.dataset.id];
      if (mode.value === "time") rect.style.fill = d && d.time !== undefined ? heat(d.time) : "#eeeeee";
      else rect.style.fill = "";
    }
  }
  mode.addEventListener("change", () => {
    recolour(canvas);
    document.getElementById("heat").hidden = mode.value !== "time";
    document.getElementById("heatmax").textContent = `0 to ${(tmax * 1e3).toFixed(3)} ms (square-root scale)`;
  });

  window.onnxcoreReport = { expand, collapse, reveal, select, runSearch, fit, info };
  fit(false);
})();
