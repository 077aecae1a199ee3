// Draws the fold's state (fold.js): the cluster, the Gantt of attempts, the jobs, the CDFs and
// the eviction timeline; listens to the run's event stream and moves the time slider.
"use strict";

const ui = { layout: null, events: [], state: null, follow: true, ended: false, lost: false, charts: null, due: false };
window.testbedUi = ui;

const COLOURS = {
  running: "#4e79a7", succeeded: "#59a14f", lost: "#e15759", failed: "#b07aa1", killed: "#bab0ac",
};
const TIME_AXIS = { type: "linear", min: 0, title: { display: true, text: "emulated seconds" } };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

const fmt = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(1));

function chart(id, type, options) {
  return new Chart(document.getElementById(id), {
    type, data: { labels: [], datasets: [] },
    options: { animation: false, maintainAspectRatio: false, plugins: { legend: { display: false } }, ...options },
  });
}

function makeCharts() {
  const cdf = (label) => ({ scales: { x: { type: "linear", min: 0, title: { display: true, text: label } },
    y: { min: 0, max: 1, title: { display: true, text: "fraction of jobs" } } } });
  return {
    gantt: chart("gantt", "bar", { indexAxis: "y", scales: { x: TIME_AXIS, y: { ticks: { autoSkip: false, font: { size: 9 } } } } }),
    jct: chart("jct", "line", cdf("JCT (emulated s)")),
    queueing: chart("queueing", "line", cdf("queueing delay (emulated s)")),
    evictions: chart("evictions", "line", { scales: { x: TIME_AXIS, y: { min: 0, title: { display: true, text: "evictions so far" } } } }),
  };
}

function drawCluster(state) {
  const root = document.getElementById("cluster");
  root.replaceChildren();
  for (const cls of Object.keys(state.layout.classes)) {
    const nodes = [...state.nodes.values()].filter((n) => n.cls === cls);
    const section = el("section", { class: "class" }, el("h3", {}, `${cls} (${nodes.length})`));
    for (const zone of [...new Set(nodes.map((n) => n.zone))]) {
      const row = el("div", { class: "zone" }, el("span", { class: "zone-name" }, zone || "no zone"));
      for (const node of nodes.filter((n) => n.zone === zone)) row.append(nodeCard(state, node));
      section.append(row);
    }
    root.append(section);
  }
}

function nodeCard(state, node) {
  const running = [...state.attempts.values()].filter((a) => a.node === node.id && a.status === "running");
  const memory = running.reduce((sum, a) => sum + a.memoryMb, 0);
  const card = el("div", { class: `node ${node.state}`, "data-node": node.id, "data-state": node.state },
    el("b", {}, node.id), el("span", {}, node.state),
    el("span", {}, `slots ${running.length}/${node.slots}`), el("span", {}, `mem ${memory}/${node.memoryMb} MB`));
  if (node.notice) card.append(el("span", { class: "notice" }, `notice ${fmt(node.notice.seconds)}s at ${fmt(node.notice.at)}`));
  const slowdown = node.slowdown * node.episode;
  if (slowdown !== 1) card.append(el("span", { class: "slow" }, `×${slowdown.toFixed(2)} slower`));
  return card;
}

function drawGantt(state) {
  const labels = [];
  for (const node of state.nodes.values()) for (let lane = 0; lane < Math.max(node.laneCount, 1); lane++) labels.push(`${node.id}/${lane}`);
  const attempts = [...state.attempts.values()];
  const width = Math.max(state.t / 300, 0.01);
  const gantt = ui.charts.gantt;
  gantt.data.labels = labels;
  gantt.data.datasets = [
    {
      label: "attempts", grouped: false,
      data: attempts.map((a) => ({ x: [a.start, a.end === null ? state.t : a.end], y: `${a.node}/${a.lane}` })),
      backgroundColor: attempts.map((a) => COLOURS[a.status] || COLOURS.failed),
      borderColor: attempts.map((a) => (a.copy ? "#f28e2b" : a.relaunch ? "#000" : "transparent")),
      borderWidth: 2,
    },
    {
      label: "evictions", grouped: false, backgroundColor: "#000",
      data: state.evictions.map((e) => ({ x: [e.t, e.t + width], y: `${e.node}/0` })),
    },
  ];
  document.getElementById("gantt-box").style.height = `${60 + 14 * labels.length}px`;
  gantt.options.scales.x.max = Math.max(state.t, 1);
  gantt.update("none");
}

function drawJobs(state) {
  const rows = [...state.jobs.values()].map((j) => el("tr", { "data-job": j.id, "data-status": j.status },
    el("td", {}, j.id), el("td", {}, j.workload), el("td", { class: j.status }, j.status), el("td", {}, String(j.tasks)),
    el("td", {}, fmt(j.submit)), el("td", {}, fmt(j.queueing)), el("td", {}, fmt(j.jct)), el("td", {}, String(j.relaunched))));
  document.querySelector("#jobs tbody").replaceChildren(...rows);
}

function drawCdf(chartOf, values) {
  const sorted = values.filter((v) => v !== null && v !== undefined).sort((a, b) => a - b);
  const steps = sorted.map((x, i) => ({ x, y: (i + 1) / sorted.length }));
  const data = sorted.length ? [{ x: sorted[0], y: 0 }, ...steps] : [];
  chartOf.data.datasets = [{ data, stepped: true, borderColor: "#4e79a7", pointRadius: 0 }];
  chartOf.update("none");
}

function drawEvictions(state) {
  const chartOf = ui.charts.evictions;
  chartOf.data.datasets = [{ data: [{ x: 0, y: 0 }, ...state.evictions.map((e, i) => ({ x: e.t, y: i + 1 })), { x: state.t, y: state.evictions.length }],
    stepped: true, borderColor: "#e15759", pointRadius: 3 }];
  chartOf.options.scales.x.max = Math.max(state.t, 1);
  chartOf.update("none");
  const items = state.evictions.map((e) => el("li", { "data-node": e.node }, `${fmt(e.t)}s ${e.node} (${e.reason}, ${e.tasks} running)`));
  document.getElementById("eviction-list").replaceChildren(...items);
}

function draw() {
  ui.due = false;
  const state = ui.state;
  if (!state) return;
  if (!ui.charts) ui.charts = makeCharts();
  const end = ui.events.length ? ui.events[ui.events.length - 1].t : 0;
  const status = state.aborted ? `aborted: ${state.aborted}` : state.ended || (ui.ended ? "journal ends (no run_finished)" : ui.lost ? "disconnected" : "running");
  document.getElementById("title").textContent = `${state.layout.name}: ${status}`;
  document.body.dataset.ended = ui.ended; // what is drawn: the stream's end, once drawn
  document.getElementById("clock-label").textContent = `t = ${fmt(state.t)} of ${fmt(end)} s`;
  drawCluster(state);
  drawGantt(state);
  drawJobs(state);
  const jobs = [...state.jobs.values()];
  drawCdf(ui.charts.jct, jobs.filter((j) => j.status === "succeeded").map((j) => j.jct));
  drawCdf(ui.charts.queueing, jobs.map((j) => j.queueing));
  drawEvictions(state);
}

function redraw() {
  if (!ui.due) { ui.due = true; setTimeout(draw, 100); }
}

function seek() {
  const slider = document.getElementById("clock");
  const end = ui.events.length ? ui.events[ui.events.length - 1].t : 0;
  ui.follow = Number(slider.value) === Number(slider.max);
  ui.state = foldUpTo(ui.layout, ui.events, ui.follow ? Infinity : (end * slider.value) / slider.max);
  if (ui.follow) ui.state.t = end;
  redraw();
}

function connect() {
  const token = new URLSearchParams(location.search).get("token") || "";
  const source = new EventSource(`/ui/events?token=${encodeURIComponent(token)}`);
  source.addEventListener("layout", (m) => { // also after a reconnection: the stream starts again
    ui.layout = JSON.parse(m.data);
    ui.events = [];
    ui.state = emptyState(ui.layout);
    ui.lost = false;
    redraw();
  });
  source.onmessage = (m) => {
    const e = JSON.parse(m.data);
    ui.events.push(e);
    if (ui.follow) foldEvent(ui.state, e);
    redraw();
  };
  source.addEventListener("end", () => { source.close(); ui.ended = true; redraw(); });
  source.onerror = () => { ui.lost = true; redraw(); };
  document.getElementById("clock").addEventListener("input", seek);
}

connect();
