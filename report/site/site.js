// The trend site's charts: SVG drawn from the document inline in index.html (#site-data).
// No library and no network: the page works from file:// as on GitHub Pages. Each chart is
// one series' metric over the nights: the median line, the interval band, dashed lines where
// the version changed, red marks where a regression was confirmed (linked to its bisection),
// and dots for other versions measured the same night.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const W = 300, H = 150, PAD = { l: 40, r: 8, t: 14, b: 18 };
  const doc = JSON.parse(document.getElementById("site-data").textContent);
  const times = doc.nights.time;
  const last = Math.max(times.length - 1, 1);
  const byKey = new Map(doc.series.map((s) => [s.key, s]));

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  }

  function titled(parent, text) {
    el("title", {}, parent).textContent = text;
  }

  function num(v) {
    if (v === null || v === undefined || !isFinite(v)) return "n/a";
    const a = Math.abs(v);
    return a >= 1000 || a === 0 ? String(Math.round(v)) : String(Number(v.toPrecision(3)));
  }

  const date = (i) => (times[i] || "?").slice(0, 10);
  const x = (i) => PAD.l + (i / last) * (W - PAD.l - PAD.r);

  // Runs of consecutive non-null points as [[index into i, ...], ...]: gaps break the line.
  function runs(values) {
    const out = [];
    let cur = [];
    values.forEach((v, k) => {
      if (v === null) { if (cur.length) out.push(cur); cur = []; } else cur.push(k);
    });
    if (cur.length) out.push(cur);
    return out;
  }

  function draw(fig) {
    const s = byKey.get(fig.dataset.series);
    const metric = fig.dataset.metric;
    const scale = doc.view.scale[metric] || 1;
    const label = doc.view.labels[metric] || metric;
    const [med, lo, hi] = s.metrics[metric].map((a) => a.map((v) => (v === null ? null : v / scale)));
    const oth = s.others.metrics[metric].map((a) => a.map((v) => (v === null ? null : v / scale)));
    const marks = s.regressions.filter((r) => r.metric === metric);
    const all = [...med, ...lo, ...hi, ...oth[0], ...marks.map((r) => (r.y === null ? null : r.y / scale))]
      .filter((v) => v !== null && isFinite(v));
    let ymin = Math.min(...all), ymax = Math.max(...all);
    if (!all.length) { ymin = 0; ymax = 1; }
    if (ymax - ymin < 1e-9 * Math.max(1, Math.abs(ymax))) { ymin -= 0.5; ymax += 0.5; }
    const span = ymax - ymin;
    ymin -= span * 0.06; ymax += span * 0.1;
    const y = (v) => PAD.t + (1 - (v - ymin) / (ymax - ymin)) * (H - PAD.t - PAD.b);

    const uid = fig.id;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
      "aria-labelledby": `${uid}-t ${uid}-d`, "data-series": s.key, "data-metric": metric,
      "data-cells": s.cells.join(" "), class: "trend" });
    const versions = s.versions.map(([, v]) => v).filter(Boolean);
    const n = med.filter((v) => v !== null).length;
    const lastK = med.length - 1;
    el("title", { id: `${uid}-t` }, svg).textContent = `${s.library} · ${s.transport} · ${label}`;
    el("desc", { id: `${uid}-d` }, svg).textContent =
      `${n} nights from ${date(s.i[0])} to ${date(s.i[lastK])}; newest median ${num(med[lastK])} ` +
      `(interval ${num(lo[lastK])} to ${num(hi[lastK])}); versions ${versions.join(", ") || "not recorded"}; ` +
      `${marks.length} confirmed regression(s).`;

    // axes: three y ticks, the first and last night's dates
    for (const t of [ymin + span * 0.05, (ymin + ymax) / 2, ymax - span * 0.08]) {
      el("line", { x1: PAD.l, x2: W - PAD.r, y1: y(t), y2: y(t), class: "axis" }, svg);
      el("text", { x: PAD.l - 3, y: y(t) + 3, "text-anchor": "end" }, svg).textContent = num(t);
    }
    el("text", { x: PAD.l, y: H - 4 }, svg).textContent = date(0);
    el("text", { x: W - PAD.r, y: H - 4, "text-anchor": "end" }, svg).textContent = date(last);

    // interval band and median line, broken where a night has none
    const ok = med.map((v, k) => (v === null || lo[k] === null || hi[k] === null ? null : v));
    for (const seg of runs(ok)) {
      const up = seg.map((k) => `${x(s.i[k]).toFixed(1)},${y(hi[k]).toFixed(1)}`);
      const down = seg.slice().reverse().map((k) => `${x(s.i[k]).toFixed(1)},${y(lo[k]).toFixed(1)}`);
      el("path", { d: `M${up.join("L")}L${down.join("L")}Z`, class: "band" }, svg);
    }
    for (const seg of runs(med)) {
      const pts = seg.map((k) => `${x(s.i[k]).toFixed(1)},${y(med[k]).toFixed(1)}`);
      el("path", { d: `M${pts.join("L")}`, class: "median" }, svg);
    }

    // other versions measured the same night
    s.others.i.forEach((i, k) => {
      if (oth[0][k] === null) return;
      const dot = el("circle", { cx: x(i), cy: y(oth[0][k]), r: 2.2, class: "other" }, svg);
      titled(dot, `${date(i)}: ${s.others.version[k] || "?"} ${num(oth[0][k])} (${s.others.cell[k]})`);
    });

    // where the version changed: dashed lines, labelled while there is room
    let lastLabel = -Infinity;
    s.versions.slice(1).forEach(([i, v]) => {
      const g = el("g", { class: "version-mark" }, svg);
      el("line", { x1: x(i), x2: x(i), y1: PAD.t, y2: H - PAD.b, class: "version" }, g);
      titled(g, `${date(i)}: version ${v}`);
      if (x(i) - lastLabel > 34 && x(i) < W - 20) {
        el("text", { x: x(i) + 2, y: PAD.t - 4, class: "version-label" }, g).textContent = v;
        lastLabel = x(i);
      }
    });

    // confirmed regressions, each linked to its bisection
    for (const r of marks) {
      const yv = r.y !== null ? r.y / scale : med[s.i.indexOf(r.i)];
      if (yv === null || yv === undefined) continue;
      const parent = r.bisection ? el("a", { href: `#bisection-${r.bisection}` }, svg) : svg;
      const g = el("g", { class: "regression-mark", "data-night": r.i }, parent);
      const cx = x(r.i), cy = y(yv);
      el("path", { d: `M${cx - 5},${PAD.t - 2}L${cx + 5},${PAD.t - 2}L${cx},${PAD.t + 6}Z` }, g);
      el("circle", { cx, cy, r: 4 }, g);
      const iv = r.interval || [null, null];
      titled(g, `Confirmed regression ${date(r.i)}: ${r.version || "?"} against ` +
        `${r.predecessor || "the baseline"}, ratio ${num(r.ratio)} [${num(iv[0])}, ${num(iv[1])}]` +
        (r.bisection ? "; click for its bisection" : ""));
    }

    // the night under the pointer, in words beside the label
    const readout = fig.querySelector(".readout");
    const cursor = el("line", { y1: PAD.t, y2: H - PAD.b, class: "cursor", visibility: "hidden" }, svg);
    svg.addEventListener("pointermove", (ev) => {
      const box = svg.getBoundingClientRect();
      const night = Math.round(((ev.clientX - box.left) / box.width * W - PAD.l) / (W - PAD.l - PAD.r) * last);
      let k = 0;
      for (let j = 0; j < s.i.length; j++) if (Math.abs(s.i[j] - night) < Math.abs(s.i[k] - night)) k = j;
      if (!s.i.length) return;
      cursor.setAttribute("x1", x(s.i[k])); cursor.setAttribute("x2", x(s.i[k]));
      cursor.setAttribute("visibility", "visible");
      let version = null;
      for (const [i, v] of s.versions) if (i <= s.i[k]) version = v;
      readout.textContent = `${date(s.i[k])} ${version || ""}: ${num(med[k])} [${num(lo[k])}, ${num(hi[k])}]`;
    });
    svg.addEventListener("pointerleave", () => { cursor.setAttribute("visibility", "hidden"); readout.textContent = ""; });
    fig.querySelector(".plot").appendChild(svg);
  }

  function filter() {
    const lib = document.getElementById("f-library").value;
    const metric = document.getElementById("f-metric").value;
    for (const sec of document.querySelectorAll("section.library")) sec.hidden = !!lib && sec.dataset.library !== lib;
    for (const fig of document.querySelectorAll("figure.chart")) fig.hidden = !!metric && fig.dataset.metric !== metric;
  }

  for (const fig of document.querySelectorAll("figure.chart")) draw(fig);
  for (const id of ["f-library", "f-metric"]) {
    const sel = document.getElementById(id);
    if (sel) sel.addEventListener("change", filter);
  }
  document.documentElement.dataset.drawn = "yes";
})();
