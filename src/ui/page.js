// coord ui: the page. It reads /api/status (the `coord status --json` document) again on every
// event of /api/events (the history, as `coord log --json` prints it) and every few seconds.
// Everything that comes from the workspace enters the document as text (textContent, title),
// never as markup: a name holding `<script>` is shown as those characters.
"use strict";

const WINDOW_MS = 15 * 60 * 1000; // how far back the timeline and the recent events go
const MAX_EVENTS = 3000; // events kept in the page
const MAX_ROWS = 40; // timeline rows
const RECENT = 30; // lines of recent events

let status = null;
let events = [];
const raws = []; // each event as it came, beside `events`
const seen = new Set(); // events already had (a reconnection may send one again)
const colours = new Map(); // agent -> colour number, in order of first appearance

// --- small helpers ---

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function short(text, n = 300) {
  const s = text === undefined || text === null ? "" : String(text);
  return s.length > n ? s.slice(0, n) + "…" : s;
}

function ago(seconds) {
  if (typeof seconds !== "number" || !isFinite(seconds)) return "-";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.floor(s / 60) + "m ago";
  if (s < 86400) return Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m ago";
  return Math.floor(s / 86400) + "d ago";
}

function agoOf(time) {
  const t = Date.parse(time);
  return isNaN(t) ? "-" : ago((Date.now() - t) / 1000);
}

function hms(ms) {
  return new Date(ms).toTimeString().slice(0, 8);
}

const TONES = new Map([
  ["ACTIVE", "good"], ["LIVE", "good"], ["LOCKED", "good"], ["CLEAN", "good"],
  ["INACTIVE", "warn"], ["WAITING", "warn"], ["STALE", "bad"], ["CONFLICT", "bad"],
  ["FINISHED", "dim"], ["NEEDS USER", "warn"],
]);

function state(word) {
  return el("span", "state " + (TONES.get(word) || ""), short(word || "-", 40));
}

function list(items) {
  return items.filter((x) => x !== null && x !== undefined && x !== "").join(", ");
}

// A table; a cell is text or a node.
function table(headers, rows) {
  const t = el("table");
  const head = t.createTHead().insertRow();
  for (const h of headers) head.appendChild(el("th", null, h));
  const body = t.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const cell of row) {
      const td = tr.insertCell();
      if (cell instanceof Node) td.appendChild(cell);
      else td.textContent = cell === null || cell === undefined || cell === "" ? "-" : short(cell);
    }
  }
  return t;
}

// Put `node` in section `id`; hide the section when there is nothing (and no `none` text).
function fill(id, node, none) {
  const section = document.getElementById(id);
  const body = section.querySelector(".body");
  body.replaceChildren();
  if (node) body.appendChild(node);
  else if (none) body.appendChild(el("p", "none", none));
  section.hidden = !node && !none;
}

function arr(x) {
  return Array.isArray(x) ? x : [];
}

// Where a lock, claim or agent is: its host (another clone), branch and work tree.
function where(x) {
  const tree = x.worktree && status && x.worktree !== status.root ? x.worktree : null;
  return list([x.host, x.branch, tree]);
}

// --- the status ---

function drawStatus() {
  const st = status;
  document.getElementById("root").textContent = short(st.shared_root || st.root, 200);
  const agents = arr(st.agents).slice().sort((a, b) => (b.needs_user ? 1 : 0) - (a.needs_user ? 1 : 0));
  const needs = agents.filter((a) => a.needs_user);
  fill("needs", needs.length ? table(["agent", "who", "waiting", "asks"],
    needs.map((a) => [a.agent, a.label || where(a), agoOf(a.needs_user.since), a.needs_user.what])) : null);
  fill("agents", agents.length ? table(["agent", "status", "heartbeat", "who", "working on", "lock", "where"],
    agents.map((a) => [a.agent, state(a.needs_user ? "NEEDS USER" : a.status), ago(a.heartbeat_age_s),
      a.label, arr(a.holds).join(", "), a.lock_status ? state(a.lock_status) : "-", where(a)])) : null, "No agents");

  const holds = arr(st.locks).map((l) => [l.file, "", l.agent, ago(l.age_s), state(l.state), l.stale_reason || l.reason, where(l)])
    .concat(arr(st.claims).map((c) => [c.pattern, "claim", c.agent, ago(c.age_s), state(c.state), c.stale_reason || c.reason, where(c)]))
    .concat(arr(st.remote && st.remote.claims).map((c) => [c.pattern, "remote claim", c.agent, agoOf(c.since), state("REMOTE"), c.reason, where(c)]))
    .map(([what, kind, ...rest]) => {
      const cell = el("span", "mono", short(what));
      if (kind) cell.appendChild(el("span", "tag", kind));
      return [cell, ...rest];
    });
  fill("locks", holds.length ? table(["file or pattern", "holder", "since", "state", "reason", "where"], holds) : null, "No locks");

  drawWaits();
  const d = st.dialogue;
  fill("dialogue", d ? table(["folder", "topic", "messages", "turn", "state"],
    [[d.folder, d.topic, String(d.message_count), d.turn, state(d.state)]]) : null);
  fill("reviews", arr(st.reviews).length ? table(["topic", "next actor", "next action", "open issues"],
    arr(st.reviews).map((r) => [r.topic, r.next_actor, r.next_action, String(r.open_issues)])) : null);
  const conflicts = arr(st.conflicts).map((c) => [el("span", "mono", short(c.file)), state(c.state),
    arr(c.trees).map((t) => (t.branch || "detached") + " (" + t.worktree + ")").join(", ")]);
  const box = el("div");
  if (conflicts.length) box.appendChild(table(["file", "merge", "branches"], conflicts));
  if (st.conflicts_note) box.appendChild(el("p", "dim", "note: " + short(st.conflicts_note)));
  fill("conflicts", box.childNodes.length ? box : null);
  drawRemote(st.remote);
  fill("unreadable", arr(st.unreadable).length ? table(["file", "why"],
    arr(st.unreadable).map((u) => [u.path, u.why])) : null);
}

// The other clones (their claims are in the locks table): how old the view is, their agents,
// and the remote branches that changed this branch's files.
function drawRemote(r) {
  if (!r) return fill("remote", null);
  const box = el("div");
  box.appendChild(el("p", "dim", r.remote + ": " + (r.age_s == null ? "never synced: run coord remote sync" : "synced " + ago(r.age_s))));
  if (arr(r.agents).length) box.appendChild(table(["agent", "host", "working on"],
    arr(r.agents).map((a) => [a.agent, a.host, arr(a.working_on).join(", ")])));
  if (arr(r.branches).length) box.appendChild(table(["remote branch", "merge", "files also changed here"],
    arr(r.branches).map((b) => [b.branch, state(b.state), arr(b.files).join(", ")])));
  arr(r.warnings).forEach((w) => box.appendChild(el("p", "dim", "warning: " + short(w))));
  fill("remote", box);
}

// Who waits for whom: the queues, the cycles among them, and deadlocks refused lately.
function drawWaits() {
  const box = el("div");
  const waits = arr(status.waits);
  if (waits.length) {
    box.appendChild(table(["agent", "waits for", "held by", "place", "since"], waits.map((w) => [
      w.agent, el("span", "mono", short(w.file)),
      arr(w.waits_for).length ? arr(w.waits_for).join(", ") : "(free: earlier waiters first)",
      "#" + w.position, agoOf(w.since)])));
  }
  for (const cycle of arr(status.deadlocks)) {
    const steps = arr(cycle).map((e) => e.agent + " waits for `" + e.file + "` held by " + e.holder);
    box.appendChild(el("p", "deadlock", "DEADLOCK: " + short(steps.join(", then "), 600)));
  }
  const cutoff = Date.now() - WINDOW_MS;
  for (const e of events) {
    if (e.event === "lock_refused" && String(e.why || "").includes("deadlock") && Date.parse(e.at) >= cutoff) {
      box.appendChild(el("p", "deadlock", hms(Date.parse(e.at)) + " refused to " + e.agent + ": " + short(e.why, 600)));
    }
  }
  fill("waits", box.childNodes.length ? box : null);
}

// --- the events ---

function describe(e) {
  const f = "`" + (e.file || e.pattern || "?") + "`";
  const words = {
    lock_taken: "locked " + f,
    lock_released: e.forced ? "removed the STALE lock of " + e.from + " on " + f : "released " + f,
    lock_taken_over: "took " + f + " over from " + e.from,
    lock_waiting: "waits for " + f + " (held by " + e.holder + ")",
    lock_refused: "was refused " + f + ": " + e.why,
    claim_taken: "claimed " + f,
    claim_released: "released the claim " + f,
    edit_denied: "was denied an edit of " + f,
    edit_made: "edited " + f,
    shell_edit: "changed " + f + " from a shell, held by " + e.holder,
    message_sent: "sent a message to " + e.to,
    dialogue_turn: "said #" + e.number + " in " + e.folder + "; " + e.next + "'s turn",
    review_step: "finished step " + e.step + " of review " + e.topic + "; next " + e.next,
    agent_arrived: "arrived",
    agent_left: "left",
    agent_crashed: "crashed (an earlier session): " + e.why,
    needs_user: "NEEDS ITS USER: " + e.what,
    user_answered: "no longer waits for its user",
  };
  return e.agent + " " + (Object.hasOwn(words, e.event) ? words[e.event] : e.event + " " + f);
}

function drawRecent() {
  const ul = el("ul", "lines");
  for (const e of events.slice(-RECENT).reverse()) {
    const li = el("li");
    li.appendChild(el("time", null, hms(Date.parse(e.at))));
    li.appendChild(document.createTextNode(short(describe(e), 400)));
    ul.appendChild(li);
  }
  fill("recent", events.length ? ul : null, "No events in the last 15 minutes");
}

function colour(agent) {
  if (!colours.has(agent)) colours.set(agent, colours.size);
  return "c" + (colours.get(agent) % 8);
}

// Holds, waits and refusals as spans, as `coord log --timeline` draws them.
function spans(now) {
  const holds = [], waits = [], marks = [];
  for (const e of events) {
    const key = e.file || e.pattern;
    const t = Date.parse(e.at);
    colour(e.agent);
    if (!key || isNaN(t)) continue;
    const endWait = () => {
      const w = waits.findLast((w) => w.key === key && w.agent === e.agent && w.to === null);
      if (w) w.to = t;
    };
    if (["lock_taken", "lock_taken_over", "claim_taken"].includes(e.event)) {
      endWait();
      const over = e.event === "lock_taken_over";
      for (const h of holds) if (h.key === key && h.to === null && (over || h.agent === e.agent)) h.to = t;
      holds.push({ key, agent: e.agent, from: t, to: null, over });
    } else if (e.event === "lock_released" || e.event === "claim_released") {
      for (const h of holds) if (h.key === key && h.to === null && (e.forced || h.agent === e.agent)) h.to = t;
    } else if (e.event === "lock_waiting") {
      waits.push({ key, agent: e.agent, from: t, to: null });
    } else if (e.event === "lock_refused" || e.event === "edit_denied") {
      endWait();
      marks.push({ key, agent: e.agent, from: t, to: t });
    }
  }
  const close = (s) => ({ ...s, to: s.to === null ? now : s.to });
  return { holds: holds.map(close), waits: waits.map(close), marks };
}

function drawTimeline() {
  const now = Date.now();
  const byAgent = document.getElementById("by-agent").checked;
  const { holds, waits, marks } = spans(now);
  const all = holds.concat(waits, marks);
  if (!all.length) return fill("timeline", null, "No locks, waits or refusals in the last 15 minutes");
  const start = Math.max(now - WINDOW_MS, Math.min(...all.map((s) => s.from)));
  const pct = (t) => (100 * (Math.max(t, start) - start)) / Math.max(1, now - start);
  const rows = new Map(); // label -> last activity
  for (const s of all) {
    const label = byAgent ? s.agent : s.key;
    rows.set(label, Math.max(rows.get(label) || 0, s.to));
  }
  const labels = [...rows.keys()].sort((a, b) => rows.get(b) - rows.get(a)).slice(0, MAX_ROWS);
  const box = el("div");
  const axis = el("div", "tl-axis");
  axis.appendChild(el("div", null, byAgent ? "agent" : "file"));
  const times = el("div");
  for (const t of [start, (start + now) / 2, now]) times.appendChild(el("span", null, hms(t)));
  axis.appendChild(times);
  box.appendChild(axis);
  for (const label of labels) {
    const row = el("div", "tl-row");
    const name = el("div", "tl-label", short(label, 200));
    name.title = label;
    const track = el("div", "tl-track");
    const mine = (s) => (byAgent ? s.agent : s.key) === label && s.to >= start;
    const put = (s, cls, title, text) => {
      const d = el("div", cls, text);
      d.style.left = pct(s.from) + "%";
      if (cls.startsWith("tl-span")) d.style.width = Math.max(0, pct(s.to) - pct(s.from)) + "%";
      d.title = title;
      track.appendChild(d);
    };
    for (const s of waits.filter(mine)) put(s, "tl-span wait " + colour(s.agent), s.agent + " waited for " + s.key + " " + hms(s.from) + "–" + hms(s.to));
    for (const s of holds.filter(mine)) {
      put(s, "tl-span " + colour(s.agent), s.agent + " held " + s.key + " " + hms(s.from) + "–" + hms(s.to));
      if (s.over) put(s, "tl-mark", s.agent + " took " + s.key + " over at " + hms(s.from), "›");
    }
    for (const s of marks.filter(mine)) put(s, "tl-mark", s.agent + " was refused " + s.key + " at " + hms(s.from), "×");
    row.append(name, track);
    box.appendChild(row);
  }
  const legend = el("div", "tl-legend");
  for (const agent of new Set(all.map((s) => s.agent))) {
    const item = el("span");
    item.append(el("span", "chip " + colour(agent)), document.createTextNode(short(agent, 60)));
    legend.appendChild(item);
  }
  legend.appendChild(el("span", null, "bar: held · thin bar below: waiting · › taken over · × refused or denied"));
  box.appendChild(legend);
  fill("timeline", box);
}

// --- keeping up ---

let fetching = false, again = false, drawPending = false;

async function refresh() {
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    const answer = await fetch("api/status", { cache: "no-store" });
    if (answer.ok) {
      status = await answer.json();
      drawStatus();
    }
  } catch (_) {
    // The server is gone or restarting: the event stream says so.
  }
  fetching = false;
  if (again) { again = false; setTimeout(refresh, 100); }
}

function drawEvents() {
  if (drawPending) return;
  drawPending = true;
  setTimeout(() => {
    drawPending = false;
    drawTimeline();
    drawRecent();
    if (status) drawWaits();
  }, 100);
}

function connect() {
  const live = document.getElementById("live");
  const source = new EventSource("api/events?since=15m");
  source.onopen = () => { live.textContent = "live"; live.className = ""; };
  source.onerror = () => { live.textContent = "reconnecting…"; live.className = "down"; };
  source.onmessage = (m) => {
    if (seen.has(m.data)) return;
    let e;
    try { e = JSON.parse(m.data); } catch (_) { return; }
    if (!e || typeof e !== "object" || typeof e.agent !== "string") return;
    seen.add(m.data);
    raws.push(m.data);
    events.push(e);
    while (events.length > MAX_EVENTS) {
      events.shift();
      seen.delete(raws.shift());
    }
    drawEvents();
    refresh();
  };
}

document.getElementById("by-agent").addEventListener("change", drawTimeline);
refresh();
connect();
setInterval(refresh, 3000);
setInterval(drawEvents, 1000);
