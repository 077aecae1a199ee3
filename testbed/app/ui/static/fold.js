// The fold of a run's journal events into the state the page draws (docs/live-view.md).
// One function for both: live, each event as the stream brings it; in replay, the events up to
// the slider's time (foldUpTo). Times are the events' own (emulated seconds).
"use strict";

const NODE_STATES = {
  node_launching: "launching", node_up: "up", node_draining: "draining", node_undrained: "up",
  node_release: "released", node_start_failed: "failed", node_ended: "ended",
};

function emptyState(layout) {
  return {
    layout, t: 0, nodes: new Map(), attempts: new Map(), jobs: new Map(), evictions: [],
    failedTasks: new Set(), ended: null, aborted: null,
  };
}

function nodeOf(state, id, cls) {
  let node = state.nodes.get(id);
  if (node) return node;
  const dash = id.lastIndexOf("-");
  const nodeClass = cls || id.slice(0, dash);
  const spec = state.layout.classes[nodeClass] || { slots: 1, memory_mb: 0, zones: [] };
  const ordinal = Number(id.slice(dash + 1));
  const zone = spec.zones.length && Number.isInteger(ordinal) ? spec.zones[ordinal % spec.zones.length] : "";
  node = {
    id, cls: nodeClass, zone, slots: spec.slots, memoryMb: spec.memory_mb, state: "launching",
    lanes: [], laneCount: 0, notice: null, slowdown: 1, episode: 1,
  };
  state.nodes.set(id, node);
  return node;
}

function startAttempt(state, e) {
  const node = nodeOf(state, e.node, e["class"]);
  let lane = node.lanes.findIndex((key) => !key);
  if (lane < 0) lane = node.lanes.length;
  const key = `${e.task}#${e.attempt}`;
  node.lanes[lane] = key;
  node.laneCount = Math.max(node.laneCount, node.lanes.length);
  state.attempts.set(key, {
    key, task: e.task, job: e.job, node: e.node, lane, start: e.t, end: null, status: "running",
    memoryMb: e.memory_mb || 0, copy: e.role === "copy", relaunch: state.failedTasks.has(e.task),
  });
  const job = state.jobs.get(e.job);
  if (job && job.start === null) job.start = e.t;
}

function endAttempt(state, e) {
  const attempt = state.attempts.get(`${e.task}#${e.attempt}`);
  if (!attempt) return; // begun before the journal we have (a resumed run's lost attempt)
  attempt.end = e.end_s !== undefined ? e.end_s : e.t;
  attempt.status = e.status;
  if (e.status !== "succeeded" && e.status !== "killed") state.failedTasks.add(e.task);
  const node = state.nodes.get(attempt.node);
  if (node && node.lanes[attempt.lane] === attempt.key) node.lanes[attempt.lane] = null;
}

function submitJob(state, e) {
  state.jobs.set(e.job, {
    id: e.job, name: e.job, workload: e.workload || "", tasks: e.tasks, submit: e.t, start: null,
    end: null, status: "running", jct: null, queueing: null, relaunched: 0,
  });
}

function finishJob(state, e) {
  if (!state.jobs.has(e.job)) submitJob(state, { ...e, t: e.submit_s !== undefined ? e.submit_s : e.t });
  const job = state.jobs.get(e.job);
  Object.assign(job, {
    name: e.name || job.name, workload: e.workload || job.workload, status: e.status, end: e.t,
    jct: e.jct_s, relaunched: e.relaunched_tasks || 0,
  });
  if (e.start_s !== undefined && e.start_s !== null) job.start = e.start_s;
  if (e.status === "succeeded" && job.start !== null) job.queueing = job.start - job.submit;
}

const FOLDS = {
  task_started: startAttempt,
  task_finished: endAttempt,
  job_submitted: submitJob,
  job_restored: submitJob,
  job_finished: finishJob,
  eviction(state, e) {
    nodeOf(state, e.node, e["class"]).state = "evicted";
    state.evictions.push({ t: e.t, node: e.node, cls: e["class"], reason: e.reason, tasks: e.tasks_running });
  },
  node_lost(state, e) {
    const node = nodeOf(state, e.node, e["class"]);
    if (node.state !== "evicted") node.state = "lost";
  },
  eviction_notice(state, e) { nodeOf(state, e.node).notice = { at: e.t, seconds: e.seconds }; },
  slowdown_drawn(state, e) { nodeOf(state, e.node, e["class"]).slowdown = e.factor; },
  slowdown_episode(state, e) { nodeOf(state, e.node).episode = e.factor; },
  run_finished(state, e) { state.ended = e.status; },
  run_aborted(state, e) { state.aborted = e.reason; },
};

function foldEvent(state, e) {
  state.t = Math.max(state.t, e.t);
  const fold = FOLDS[e.event];
  if (fold) fold(state, e);
  else if (NODE_STATES[e.event]) nodeOf(state, e.node, e["class"]).state = NODE_STATES[e.event];
  return state;
}

function foldUpTo(layout, events, t) {
  const state = emptyState(layout);
  for (const e of events) if (e.t <= t) foldEvent(state, e);
  state.t = Math.max(state.t, t);
  return state;
}

if (typeof module !== "undefined") module.exports = { emptyState, foldEvent, foldUpTo };
