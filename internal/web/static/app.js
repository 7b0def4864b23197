// SPDX-License-Identifier: Apache-2.0
// xlb's live page: reads the read-only API every second, keeps a minute
// of history in the browser and draws the tables and sparklines. No
// framework, no build step.
"use strict";

const HISTORY = 60;                 // samples kept for the sparklines
const history = new Map();          // key -> [values], oldest first
let previous = null;                // the last reading: {at, services, stats}

function push(key, value) {
  let h = history.get(key);
  if (!h) { h = []; history.set(key, h); }
  h.push(value);
  if (h.length > HISTORY) h.shift();
  return h;
}

function spark(values) {
  const w = 60, h = 14;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (HISTORY - 1) : 0;
  const x0 = w - step * (values.length - 1);
  const pts = values.map((v, i) => `${(x0 + i * step).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`).join(" ");
  return `<svg class="spark" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}"><polyline points="${pts}"/></svg>`;
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

function num(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return String(Math.round(n));
}

function hostPort(addr, port) {
  return addr.includes(":") ? `[${addr}]:${port}` : `${addr}:${port}`;
}

function serviceKey(s) { return `${s.protocol} ${hostPort(s.vip, s.port)}`; }

// rate of counter field f between the previous and this reading
function rate(prev, cur, f, secs) {
  if (!prev || secs <= 0 || cur[f] < prev[f]) return 0;
  return (cur[f] - prev[f]) / secs;
}

// rateCells: conn/s, in/out packets/s, in/out bits/s, each with its
// sparkline, for a service or a real under key
function rateCells(key, prev, cur, secs) {
  const cells = [
    ["conns", rate(prev, cur, "conns", secs)],
    ["in_packets", rate(prev, cur, "in_packets", secs)],
    ["out_packets", rate(prev, cur, "out_packets", secs)],
    ["in_bytes", 8 * rate(prev, cur, "in_bytes", secs)],
    ["out_bytes", 8 * rate(prev, cur, "out_bytes", secs)],
  ];
  return cells.map(([f, v]) => `<td data-rate="${f}" data-value="${v.toFixed(1)}">${num(v)}${spark(push(key + " " + f, v))}</td>`).join("");
}

function realState(r) {
  if (r.health === "down") return ["down", r.health_reason || "health check failed"];
  if (r.next_hop === "unresolved") return ["unresolved", r.next_hop_reason || "next hop unresolved"];
  if (r.weight === 0) return ["drained", "weight 0: no new connections"];
  if (r.health === "up") return ["up", "health check passes"];
  return ["up", "no health check"];
}

function renderServices(services, secs) {
  const prevByKey = new Map((previous ? previous.services : []).map(s => [serviceKey(s), s]));
  const rows = [];
  for (const s of services) {
    const key = serviceKey(s);
    const ps = prevByKey.get(key);
    const name = s.name ? ` (${esc(s.name)})` : "";
    const taking = s.reals.filter(r => realState(r)[0] === "up").length;
    rows.push(`<tr class="service" data-service="${esc(key)}"><td>${esc(key)}${name}</td><td>${esc(s.scheduler)}</td>` +
      `<td></td><td class="state">${taking} of ${s.reals.length} reals take connections</td><td></td><td></td>` +
      `<td data-total="conns">${s.stats.conns}</td>${rateCells(key, ps && ps.stats, s.stats, secs)}</tr>`);
    const prevReals = new Map((ps ? ps.reals : []).map(r => [hostPort(r.address, r.port), r]));
    for (const r of s.reals) {
      const rk = hostPort(r.address, r.port);
      const [state, why] = realState(r);
      const pr = prevReals.get(rk);
      rows.push(`<tr class="real" data-real="${esc(rk)}" data-service="${esc(key)}" data-state="${state}">` +
        `<td>${esc(rk)}</td><td></td><td>${r.weight}</td>` +
        `<td class="state"><span class="${state}" title="${esc(why)}">${state}</span> <small>${esc(why)}</small></td>` +
        `<td>${r.active_conns}</td><td>${r.inactive_conns}</td><td data-total="conns">${r.stats.conns}</td>` +
        `${rateCells(key + " " + rk, pr && pr.stats, r.stats, secs)}</tr>`);
    }
  }
  document.querySelector("#services tbody").innerHTML = rows.join("") ||
    `<tr><td colspan="12">no service configured</td></tr>`;
}

function renderDrops(drops, secs) {
  const prev = previous ? previous.stats.drops : {};
  const rows = Object.keys(drops).sort().filter(k => drops[k] > 0).map(k => {
    const per = previous && drops[k] >= prev[k] ? (drops[k] - prev[k]) / secs : 0;
    return `<tr data-drop="${esc(k)}"><td>${esc(k)}</td><td>${drops[k]}</td><td>${num(per)}${spark(push("drop " + k, per))}</td></tr>`;
  });
  document.querySelector("#drops tbody").innerHTML = rows.join("") || `<tr><td colspan="3">no drops</td></tr>`;
}

function renderTables(tables) {
  document.querySelector("#tables tbody").innerHTML = (tables || []).map(t => {
    const pct = (100 * t.occupancy).toFixed(1);
    const high = t.occupancy > 0.9 ? " high" : "";
    return `<tr data-table="${esc(t.family)}"><td>${esc(t.family)}</td>` +
      `<td><span class="bar${high}"><span style="width:${Math.min(100, pct)}%"></span></span> ${pct}%</td>` +
      `<td>${t.live_entries}</td><td>${t.max_entries}</td><td>${t.refused}</td></tr>`;
  }).join("");
}

function renderStatus(st) {
  const ifs = (st.interfaces || []).map(i => `${esc(i.name)} (${esc(i.mode)})`).join(", ");
  document.getElementById("daemon").innerHTML =
    `xlb ${esc(st.version)}, up ${esc(st.uptime)} &middot; config ${esc(st.config_path)} revision ${st.revision} &middot; ${ifs} &middot; ` +
    `reals ${st.reals.up} up, ${st.reals.down} down, ${st.reals.unresolved} unresolved, ${st.reals.drained} drained`;
  const w = st.warnings || [];
  document.getElementById("warnings").innerHTML = w.length ? w.map(m => `<li>${esc(m)}</li>`).join("") : "<li class=\"none\">none</li>";
}

async function getJSON(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return r.json();
}

async function refresh() {
  try {
    const [status, services, stats] = await Promise.all([getJSON("v1/status"), getJSON("v1/services"), getJSON("v1/stats")]);
    const at = Date.now();
    const secs = previous ? (at - previous.at) / 1000 : 0;
    renderStatus(status);
    renderServices(services, secs);
    renderDrops(stats.drops || {}, secs);
    renderTables(status.conn_tables);
    previous = {at, services, stats};
    const u = document.getElementById("updated");
    u.textContent = "updated " + new Date(at).toLocaleTimeString();
    u.dataset.updates = String(Number(u.dataset.updates || 0) + 1);
  } catch (e) {
    document.getElementById("updated").textContent = "daemon unreachable: " + e.message;
  }
}

refresh();
setInterval(refresh, 1000);
