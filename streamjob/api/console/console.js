// streamjob's web console: plain JavaScript over the HTTP API (/v1/...), no build step.
// The jobs list follows GET /v1/events (server-sent events, read with fetch so that the
// bearer token travels in the Authorization header, never in a URL).
"use strict";

const $ = (sel) => document.querySelector(sel);
const tokenInput = $("#token");
tokenInput.value = localStorage.getItem("streamjob.token") || "";
tokenInput.addEventListener("change", () => {
  localStorage.setItem("streamjob.token", tokenInput.value.trim());
  // what the previous token read is not this one's: cleared before the views read again
  // (the jobs list follows the new event stream)
  for (const el of document.querySelectorAll("main section:not(#jobs-view) tbody, #job-facts, " +
                                             "#manager-facts, #version-diff")) {
    el.replaceChildren();
  }
  roleKnown = whoami();
  followEvents();
  route();
});

function headers(extra) {
  const h = Object.assign({ "Accept": "application/json" }, extra || {});
  const t = tokenInput.value.trim();
  if (t) h["Authorization"] = "Bearer " + t;
  return h;
}

// Every POST is JSON (the server refuses any other POST with 415: a cross-site form
// cannot send JSON without the server's leave, so it cannot act through a browser).
async function api(path, options) {
  const opts = Object.assign({}, options || {});
  if (opts.method === "POST") {
    opts.headers = Object.assign({ "Content-Type": "application/json" }, opts.headers || {});
    if (opts.body === undefined) opts.body = "{}";
  }
  opts.headers = headers(opts.headers);
  const resp = await fetch(path, opts);
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = new Error((body.error && body.error.message) || resp.statusText);
    err.status = resp.status; err.body = body;
    throw err;
  }
  return body;
}

// ---------------------------------------------------------------- who is asking

// Actions (start, stop, savepoints) are offered only to a role the API lets act
// (GET /v1/whoami: an operator or the admin; docs/security.md). Until the role is known
// they stay hidden; the API refuses a viewer's action either way (403).
let mayChange = false;
let roleKnown = null;
async function whoami() {
  mayChange = false;
  applyRole();
  try {
    const me = await api("/v1/whoami");
    mayChange = me.may_change === true;
    $("#whoami").textContent = me.principal + " (" + me.role + ")";
  } catch (e) {
    $("#whoami").textContent = "";
  }
  applyRole();
}

function applyRole() {
  document.body.dataset.mayChange = String(mayChange);
  for (const el of document.querySelectorAll(".operator-only")) el.hidden = !mayChange;
}

function jobPath(name) { return "/v1/jobs/" + encodeURIComponent(name); }

// A job's "db.name" as StreamSQL: each part backquoted (a backquote doubled), so no job
// name can change the statement it is put in.
function quoteName(name) {
  const dot = name.indexOf(".");
  const parts = dot < 0 ? [name] : [name.slice(0, dot), name.slice(dot + 1)];
  return parts.map((p) => "`" + p.replace(/`/g, "``") + "`").join(".");
}

// A savepoint name the API accepts (app.py's pattern): typed names are checked before
// they go into a statement; a listed one that does not match is backquoted.
const SAVEPOINT_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
function quoteIdent(name) {
  return SAVEPOINT_NAME.test(name) ? name : "`" + name.replace(/`/g, "``") + "`";
}

function statement(sql) {
  return api("/v1/statements", { method: "POST", body: JSON.stringify({ sql: sql }) });
}

function cell(tr, value, cls) {
  const td = document.createElement("td");
  td.textContent = value === null || value === undefined ? "" : String(value);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

function fmt(n, digits) {
  return n === null || n === undefined ? "" : Number(n).toLocaleString(undefined,
    { maximumFractionDigits: digits === undefined ? 1 : digits });
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const s = Math.max(0, Math.floor(seconds));
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (s >= size) return Math.floor(s / size) + " " + unit + " ago";
  }
  return s + " s ago";
}

// ---------------------------------------------------------------- jobs list

function showStatus(snapshot) {
  const body = $("#jobs tbody");
  body.replaceChildren();
  for (const j of snapshot.jobs) {
    const tr = document.createElement("tr");
    tr.dataset.job = j.job;
    const a = document.createElement("a");
    a.href = "#/jobs/" + encodeURIComponent(j.job);
    a.textContent = j.job;
    const td = document.createElement("td");
    td.appendChild(a);
    tr.appendChild(td);
    cell(tr, j.status + (j.live === false ? " (job manager gone)" : ""), "state state-" + j.status);
    cell(tr, j.desired_state);
    cell(tr, fmt(j.input_rows_per_s), "num input-rate");
    cell(tr, fmt(j.processed_rows_per_s), "num processed-rate");
    cell(tr, fmt(j.lag_records, 0), "num lag");
    cell(tr, j.batch === null ? "" : "#" + j.batch + " " + age(j.last_checkpoint_age_s), "checkpoint");
    cell(tr, j.error ? j.error.split("\n")[0] : "", "error");
    body.appendChild(tr);
  }
  $("#jobs-updated").textContent = "updated " + snapshot.at +
    (snapshot.server ? " · job manager " + snapshot.server.label : " · no job manager holds the lease");
  $("#server").textContent = snapshot.server ? "job manager " + snapshot.server.label : "";
}

let events = null;
async function followEvents() {
  if (events) events.abort();
  const ctrl = new AbortController();
  events = ctrl;
  while (!ctrl.signal.aborted) {
    try {
      const resp = await fetch("/v1/events", { headers: headers({ "Accept": "text/event-stream" }),
                                               signal: ctrl.signal });
      if (!resp.ok) {
        $("#jobs-updated").textContent = resp.status === 401
          ? "enter a token (the server printed an admin token at its first start; more: streamjob token create)"
          : "events: HTTP " + resp.status;
      }
      else {
        const reader = resp.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const lines = block.split("\n");
            const kind = (lines.find((l) => l.startsWith("event: ")) || "event: status").slice(7);
            const data = lines.filter((l) => l.startsWith("data: "))
              .map((l) => l.slice(6)).join("\n");
            if (data && kind === "end") { $("#jobs-updated").textContent = JSON.parse(data).message; }
            else if (data) { showStatus(JSON.parse(data)); }
          }
        }
      }
    } catch (e) {
      if (ctrl.signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, 2000));  // the server went away: reconnect
  }
}

// ---------------------------------------------------------------- one job

function chart(svg, series, labels) {
  // series: arrays of [t (ms), y]; drawn as polylines on a shared scale
  svg.replaceChildren();
  const all = series.flat();
  const ns = "http://www.w3.org/2000/svg";
  if (!all.length) {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", 10); t.setAttribute("y", 20); t.textContent = "no data yet";
    svg.appendChild(t);
    return;
  }
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.max(1, ...ys);
  series.forEach((points, i) => {
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("class", "s" + i);
    line.setAttribute("points", points.map(([x, y]) =>
      (10 + 580 * (x1 === x0 ? 1 : (x - x0) / (x1 - x0))).toFixed(1) + "," +
      (150 - 135 * y / y1).toFixed(1)).join(" "));
    svg.appendChild(line);
  });
  const max = document.createElementNS(ns, "text");
  max.setAttribute("x", 12); max.setAttribute("y", 12);
  max.textContent = "max " + fmt(y1) + (labels ? "  (" + labels.join(", ") + ")" : "");
  svg.appendChild(max);
}

function rows(table, items, fields) {
  const body = table.querySelector("tbody");
  body.replaceChildren();
  for (const item of items) {
    const tr = document.createElement("tr");
    for (const f of fields) cell(tr, typeof f === "function" ? f(item) : item[f]);
    body.appendChild(tr);
  }
}

async function showJob(name) {
  const gen = viewGen;
  const job = await api("/v1/jobs/" + encodeURIComponent(name));
  const progress = await api("/v1/jobs/" + encodeURIComponent(name) + "/progress");
  if (gen !== viewGen) return;  // the route or the token changed meanwhile
  $("#job-title").textContent = "streamjob " + job.job;
  const facts = $("#job-facts");
  facts.replaceChildren();
  for (const [k, v] of [["state", job.status], ["desired", job.desired_state],
                        ["guarantee", job.guarantee],
                        ["input rows/s", fmt(job.input_rows_per_s)], ["lag", fmt(job.lag_records, 0)],
                        ["last checkpoint", job.batch === null ? "" : "#" + job.batch + " " + age(job.last_checkpoint_age_s)],
                        ["failures since last checkpoint", job.attempts], ["last error", job.last_error || ""]]) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v === null || v === undefined ? "" : v;
    facts.append(dt, dd);
  }
  $("#job-sql").textContent = job.query;
  rows($("#properties"), job.properties, ["property", "value", "origin"]);
  rows($("#runs"), job.runs.slice(-20).reverse(), ["attempt", "status", "started_at", "ended_at", "cause"]);
  rows($("#checkpoints"), job.checkpoints.slice().reverse(),
       ["checkpoint_id", "ended_at", "duration_ms", "input_rows", "state_rows", "state_bytes", "status"]);
  const t = (s) => Date.parse(s.at);
  // an unknown rate (null: a run before its first batch) is a gap, not 0
  const known = (key) => progress.samples.filter((s) => s[key] !== null && s[key] !== undefined)
    .map((s) => [t(s), s[key]]);
  chart($("#chart-rate"), [known("input_rows_per_s"), known("processed_rows_per_s")],
        ["input", "processed"]);
  chart($("#chart-lag"), [progress.samples.filter((s) => s.lag_records !== null)
                          .map((s) => [t(s), s.lag_records])]);
  chart($("#chart-checkpoints"), [job.checkpoints.map((c) => [c.checkpoint_id, c.duration_ms || 0])]);
  chart($("#chart-checkpoint-rows"), [job.checkpoints.map((c) => [c.checkpoint_id, c.input_rows || 0]),
                                      job.checkpoints.map((c) => [c.checkpoint_id, c.state_rows || 0])],
        ["rows in", "state rows"]);
  chart($("#chart-checkpoint-bytes"), [job.checkpoints.filter((c) => c.state_bytes !== null)
                                       .map((c) => [c.checkpoint_id, c.state_bytes])]);
  $("#job-start").onclick = () => api("/v1/jobs/" + encodeURIComponent(name) + "/start",
                                      { method: "POST" }).then(() => showJob(name), alertError);
  $("#job-stop").onclick = () => api("/v1/jobs/" + encodeURIComponent(name) + "/stop",
                                     { method: "POST" }).then(() => showJob(name), alertError);
}

function alertError(e) { window.alert(e.message); }

// ---------------------------------------------------------------- savepoints

function offsetsText(offsets) {
  // {"orders": {"0": 52000, "1": 51890}} -> "orders 0:52000 1:51890"
  if (offsets === null || offsets === undefined) return "";
  if (typeof offsets !== "object") return String(offsets);
  return Object.entries(offsets).map(([source, parts]) => source + " " +
    (parts !== null && typeof parts === "object"
      ? Object.entries(parts).map(([p, o]) => p + ":" + o).join(" ") : String(parts))).join("; ");
}

async function showSavepoints(name) {
  const gen = viewGen;
  await roleKnown;
  const { savepoints } = await api(jobPath(name) + "/savepoints");
  if (gen !== viewGen) return;  // the route or the token changed meanwhile
  $("#savepoints-view .job-name").textContent = "streamjob " + name + ": savepoints";
  const body = $("#savepoints tbody");
  body.replaceChildren();
  for (const sp of savepoints) {
    const tr = document.createElement("tr");
    tr.dataset.savepoint = sp.savepoint;
    cell(tr, sp.savepoint, "savepoint");
    cell(tr, sp.checkpoint_id, "num");
    cell(tr, sp.epoch);
    cell(tr, sp.taken_at);
    cell(tr, sp.created_at);
    cell(tr, sp.owner);
    cell(tr, offsetsText(sp.source_offsets), "offsets");
    if (mayChange) {
      const td = document.createElement("td");
      td.className = "operator-only";
      const start = document.createElement("button");
      start.textContent = "start from";
      start.className = "savepoint-start";
      start.title = "START STREAMJOB ... FROM SAVEPOINT " + sp.savepoint;
      start.onclick = () => savepointAction(name, () => api(jobPath(name) + "/start",
        { method: "POST", body: JSON.stringify({ from_savepoint: sp.savepoint }) }));
      const drop = document.createElement("button");
      drop.textContent = "drop";
      drop.className = "savepoint-drop";
      drop.onclick = () => {
        if (!window.confirm("drop savepoint " + sp.savepoint + " of " + name + "?")) return;
        savepointAction(name, () => statement("DROP SAVEPOINT " + quoteIdent(sp.savepoint) +
                                              " FOR STREAMJOB " + quoteName(name)));
      };
      td.append(start, " ", drop);
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  $("#savepoints-none").hidden = savepoints.length > 0;
}

async function savepointAction(name, act) {
  const error = $("#savepoints-error");
  error.hidden = true;
  try {
    await act();
  } catch (e) {
    error.hidden = false;
    error.textContent = e.message;
  }
  await showSavepoints(name);
}

function typedSavepoint() {
  const sp = $("#savepoint-name").value.trim();
  if (!SAVEPOINT_NAME.test(sp)) {
    throw new Error("a savepoint name is a letter or _ and then letters, digits or _ (up to 128)");
  }
  return sp;
}

$("#savepoint-create").onclick = () => {
  const name = currentJob;
  savepointAction(name, async () => statement("CREATE SAVEPOINT " + typedSavepoint() +
                                              " FOR STREAMJOB " + quoteName(name)));
};
$("#savepoint-stop").onclick = () => {
  const name = currentJob;
  savepointAction(name, async () => api(jobPath(name) + "/stop",
    { method: "POST", body: JSON.stringify({ savepoint: typedSavepoint() }) }));
};

// ---------------------------------------------------------------- query versions

// The lines of a and b as [op, line]: " " in both, "-" only in a, "+" only in b (a
// longest common subsequence of lines, as diff(1) finds; a query has few lines).
function lineDiff(a, b) {
  const n = a.length, m = b.length;
  if (n * m > 4000000) return a.map((l) => ["-", l]).concat(b.map((l) => ["+", l]));
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < n) out.push(["-", a[i++]]);
  while (j < m) out.push(["+", b[j++]]);
  return out;
}

let shownVersions = [];
function showDiff() {
  const from = shownVersions.find((v) => String(v.version) === $("#diff-from").value);
  const to = shownVersions.find((v) => String(v.version) === $("#diff-to").value);
  const out = $("#version-diff");
  out.replaceChildren();
  if (!from || !to) { $("#diff-summary").textContent = ""; return; }
  const ops = lineDiff(from.query.split("\n"), to.query.split("\n"));
  const cls = { " ": "diff-same", "-": "diff-del", "+": "diff-add" };
  for (const [op, line] of ops) {
    const span = document.createElement("span");
    span.className = "diff-line " + cls[op];
    span.textContent = op + " " + line;  // text, never markup: the query is user input
    out.append(span, "\n");
  }
  const added = ops.filter((o) => o[0] === "+").length, removed = ops.filter((o) => o[0] === "-").length;
  $("#diff-summary").textContent = from.version === to.version ? "the same version" :
    "version " + from.version + " \u2192 " + to.version + ": " + added + " line(s) added, " +
    removed + " removed";
}

async function showVersions(name) {
  const gen = viewGen;
  const { versions } = await api(jobPath(name) + "/versions");
  if (gen !== viewGen) return;
  $("#versions-view .job-name").textContent = "streamjob " + name + ": query versions";
  shownVersions = versions;
  rows($("#versions"), versions, ["version", "created_at", "principal", "change"]);
  for (const [sel, pick] of [["#diff-from", Math.max(0, versions.length - 2)],
                             ["#diff-to", versions.length - 1]]) {
    const select = $(sel);
    select.replaceChildren();
    versions.forEach((v, i) => {
      const o = document.createElement("option");
      o.value = String(v.version);
      o.textContent = "version " + v.version;
      o.selected = i === pick;
      select.appendChild(o);
    });
    select.onchange = showDiff;
  }
  showDiff();
}

// ---------------------------------------------------------------- shadow runs

// The job's shadow (GET /v1/jobs/{name}/shadow, docs/upgrades.md "Shadow runs"): its
// state, the new query and the comparison's counts and samples; PROMOTE and DISCARD for
// a role that may act. Every value is text in the page (textContent), never markup.
function sampleTable(table, columns, samples) {
  const head = document.createElement("tr");
  for (const c of columns) { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); }
  table.querySelector("thead").replaceChildren(head);
  rows(table, samples, columns.map((c) => (r) => r[c] === null || r[c] === undefined ? "NULL" : String(r[c])));
}

function rowText(row) {
  return Object.entries(row || {}).map(([k, v]) => k + "=" + (v === null ? "NULL" : v)).join(", ");
}

async function showShadow(name) {
  const gen = viewGen;
  await roleKnown;
  let shadow = null;
  try {
    shadow = await api(jobPath(name) + "/shadow");
  } catch (e) {
    if (e.status === undefined || e.status >= 500 || e.status === 401 || e.status === 403) throw e;
  }
  if (gen !== viewGen) return;
  $("#shadow-view .job-name").textContent = "streamjob " + name + ": shadow";
  $("#shadow-none").hidden = shadow !== null;
  $("#shadow-report").hidden = shadow === null;
  if (shadow === null) return;
  const cmp = shadow.comparison || {};
  const count = (k) => (cmp[k] || {}).count;
  const facts = $("#shadow-facts");
  facts.replaceChildren();
  const batches = shadow.batches ? shadow.batches[0] + "-" + shadow.batches[1] : "";
  for (const [k, v] of [["status", shadow.status], ["started", (shadow.at || "") + " by " + (shadow.by || "")],
                        ["from checkpoint", shadow.checkpoint], ["batches", batches],
                        ["compared", cmp.keyed ? "key by key (" + (cmp.key || []).join(", ") + ")" : "as multisets"],
                        ["rows", cmp.old_rows === undefined ? "" : "old " + cmp.old_rows + ", new " + cmp.new_rows + ", same " + cmp.same],
                        ["scratch sinks", [shadow.old_table, shadow.new_table].filter(Boolean).join(", ")],
                        ["error", shadow.error || ""]]) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v === null || v === undefined ? "" : v;
    dd.dataset.fact = k;
    facts.append(dt, dd);
  }
  $("#shadow-sql").textContent = shadow.query || "";
  const counts = [["only in the old query's output", "only_old"], ["only in the new query's output", "only_new"],
                  ["changed values", "changed"]];
  rows($("#shadow-counts"), counts, [(c) => c[0], (c) => count(c[1]) === undefined ? "" : count(c[1])]);
  $("#shadow-counts").querySelectorAll("tbody tr").forEach((tr, i) => { tr.dataset.difference = counts[i][1]; });
  const columns = cmp.columns || [];
  sampleTable($("#shadow-only-old"), columns, (cmp.only_old || {}).samples || []);
  sampleTable($("#shadow-only-new"), columns, (cmp.only_new || {}).samples || []);
  rows($("#shadow-changed"), (cmp.changed || {}).samples || [],
       [(c) => rowText(c.key), (c) => (c.columns || []).join(", "), (c) => rowText(c.old), (c) => rowText(c.new)]);
  $("#shadow-promote").hidden = shadow.status !== "compared";
  const act = (verb, call) => {
    if (!window.confirm(verb + " the shadow of " + name + "?")) return;
    const error = $("#shadow-error");
    error.hidden = true;
    call().then(() => showShadow(name), (e) => { error.textContent = e.message; error.hidden = false; });
  };
  $("#shadow-promote").onclick = () => act("promote", () => api(jobPath(name) + "/shadow/promote", { method: "POST" }));
  $("#shadow-discard").onclick = () => act("discard", () => api(jobPath(name) + "/shadow", { method: "DELETE" }));
}

// ---------------------------------------------------------------- servers

// "used of declared, free" for a server's cores or memory (declared null: no limit)
function capacity(used, declared, unit) {
  const u = unit || "";
  return declared === null || declared === undefined
    ? used + u + " used, no limit"
    : used + u + " of " + declared + u + " used, " + Math.max(0, declared - used) + u + " free";
}

function ageMs(ms) { return ms === null || ms === undefined ? "" : fmt(ms / 1000, 1) + " s ago"; }

async function showServers() {
  const gen = viewGen;
  const snapshot = await api("/v1/status");
  if (gen !== viewGen) return;
  const facts = $("#manager-facts");
  facts.replaceChildren();
  const m = snapshot.server;
  const items = m ? [["server", m.label], ["server id", m.server_id], ["host", m.host],
                     ["pid", m.pid], ["Spark master", m.spark_master], ["started", m.started_at],
                     ["heartbeat", ageMs(m.heartbeat_age_ms)]]
                  : [["server", "none: no job manager holds the lease"]];
  for (const [k, v] of items) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v === null || v === undefined ? "" : v;
    facts.append(dt, dd);
  }
  const body = $("#servers tbody");
  body.replaceChildren();
  for (const s of snapshot.servers || []) {
    const tr = document.createElement("tr");
    tr.dataset.server = s.server_id;
    cell(tr, s.label);
    cell(tr, s.server_id);
    const jobs = document.createElement("td");
    jobs.className = "jobs";
    s.jobs.forEach((j, i) => {
      const a = document.createElement("a");
      a.href = "#/jobs/" + encodeURIComponent(j);
      a.textContent = j;
      if (i) jobs.append(", ");
      jobs.appendChild(a);
    });
    tr.appendChild(jobs);
    cell(tr, s.max_jobs === null ? "no limit" : s.jobs.length + " of " + s.max_jobs, "num");
    cell(tr, capacity(s.cores_used, s.cores), "cores");
    cell(tr, capacity(s.memory_used_mb, s.memory_mb, " MiB"), "memory");
    cell(tr, (s.labels || []).join(", "));
    cell(tr, ageMs(s.heartbeat_age_ms), "heartbeat");
    body.appendChild(tr);
  }
  $("#servers-none").hidden = (snapshot.servers || []).length > 0;
  const waiting = Object.entries((snapshot.placement || {}).waiting || {});
  const wbody = $("#servers-waiting tbody");
  wbody.replaceChildren();
  for (const [name, why] of waiting) {
    const tr = document.createElement("tr");
    tr.dataset.job = name;
    const td = document.createElement("td");
    const a = document.createElement("a");
    a.href = "#/jobs/" + encodeURIComponent(name);
    a.textContent = name;
    td.appendChild(a);
    tr.appendChild(td);
    cell(tr, why, "why");
    wbody.appendChild(tr);
  }
  $("#servers-waiting-none").hidden = waiting.length > 0;
  $("#servers-updated").textContent = "updated " + snapshot.at;
}

// ---------------------------------------------------------------- SQL editor

const sqlBox = $("#sql");
function gutter(badLine) {
  const n = Math.max(1, sqlBox.value.split("\n").length);
  const g = $("#gutter");
  g.replaceChildren();
  for (let i = 1; i <= n; i++) {
    const span = document.createElement("div");
    span.textContent = i;
    if (i === badLine) span.className = "bad";
    g.appendChild(span);
  }
}
sqlBox.addEventListener("input", () => gutter(null));
gutter(null);

let sessionProperties = {};
$("#run").addEventListener("click", async () => {
  const error = $("#sql-error"), out = $("#sql-results");
  error.hidden = true; out.replaceChildren(); gutter(null);
  let body;
  try {
    body = await api("/v1/statements", { method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ sql: sqlBox.value, properties: sessionProperties }) });
  } catch (e) {
    body = e.body || {};
    const err = body.error || { message: e.message };
    error.hidden = false;
    error.dataset.line = err.line || "";
    error.dataset.column = err.column || "";
    error.textContent = (err.line ? "line " + err.line + ", column " + err.column + ": " : "") +
      err.message + (err.snippet ? "\n" + err.snippet : "");
    gutter(err.line || null);
    if (err.line) {  // put the cursor on the offending text
      const lines = sqlBox.value.split("\n");
      let offset = 0;
      for (let i = 0; i < err.line - 1; i++) offset += lines[i].length + 1;
      sqlBox.focus();
      sqlBox.setSelectionRange(offset + (err.column || 1) - 1, offset + (err.column || 1) - 1);
    }
  }
  if (body.properties) sessionProperties = body.properties;
  for (const r of body.results || []) showResult(out, r);
});

function showResult(out, r) {
  for (const part of (r.sections && r.sections.length ? r.sections : [r])) {
    if (part.columns && part.columns.length) {
      const table = document.createElement("table");
      if (part.title) { const c = document.createElement("caption"); c.textContent = part.title; table.appendChild(c); }
      const head = document.createElement("tr");
      for (const c of part.columns) { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); }
      table.appendChild(head);
      for (const row of part.rows) {
        const tr = document.createElement("tr");
        for (const v of row) cell(tr, typeof v === "object" && v !== null ? JSON.stringify(v) : v);
        table.appendChild(tr);
      }
      out.appendChild(table);
    }
  }
  if (r.message) { const p = document.createElement("p"); p.textContent = r.message; out.appendChild(p); }
}

// ---------------------------------------------------------------- routing

let jobTimer = null;
let currentJob = null;
let viewGen = 0;  // counts routes: a view's answer to an earlier route is dropped
const VIEWS = ["#jobs-view", "#job-view", "#savepoints-view", "#versions-view",
               "#shadow-view", "#servers-view", "#sql-view"];
function route() {
  const hash = location.hash || "#/";
  clearInterval(jobTimer);
  viewGen += 1;
  const m = hash.match(/^#\/jobs\/([^/]+)(?:\/(savepoints|versions|shadow))?$/);
  const view = m ? (m[2] ? "#" + m[2] + "-view" : "#job-view")
    : { "#/": "#jobs-view", "#/sql": "#sql-view", "#/servers": "#servers-view" }[hash];
  for (const v of VIEWS) $(v).hidden = v !== view;
  let refresh = null, again = true, failed = null;
  if (m) {
    const name = decodeURIComponent(m[1]);
    currentJob = name;
    const base = "#/jobs/" + encodeURIComponent(name);
    for (const nav of document.querySelectorAll(".job-tabs")) {
      for (const [cls, href] of [["tab-overview", base], ["tab-savepoints", base + "/savepoints"],
                                 ["tab-versions", base + "/versions"], ["tab-shadow", base + "/shadow"]]) {
        const a = nav.querySelector("." + cls);
        a.href = href;
        a.classList.toggle("current", href === hash);
      }
    }
    if (m[2] === "savepoints") {
      refresh = () => showSavepoints(name);
      failed = (e) => { $("#savepoints-view .job-name").textContent = e.message; };
    } else if (m[2] === "shadow") {
      refresh = () => showShadow(name);
      failed = (e) => { $("#shadow-view .job-name").textContent = e.message; };
    } else if (m[2] === "versions") {
      refresh = () => showVersions(name);
      again = false;  // the chosen versions stay chosen
      failed = (e) => { $("#versions-view .job-name").textContent = e.message; };
    } else {
      refresh = () => showJob(name);
      failed = (e) => { $("#job-title").textContent = e.message; };
    }
  } else if (view === "#servers-view") {
    refresh = showServers;
    failed = (e) => { $("#servers-updated").textContent = e.message; };
  }
  if (refresh) {
    const run = () => refresh().catch(failed);
    run();
    if (again) jobTimer = setInterval(run, 5000);
  }
}
window.addEventListener("hashchange", route);
roleKnown = whoami();
followEvents();
route();
