"""The lookup browser's page: its HTML, script and style, served as they are (:data:`PAGE_FILES`).

The script builds every element with ``textContent`` and ``dataset``, never
markup from data, so an attribute value such as ``<script>`` shows as text;
the server's Content-Security-Policy allows scripts from these files only.
It reads the stream with ``fetch`` (not ``EventSource``, which cannot send a
header), so that the admin token goes in a header, kept in this page's memory
only, and sent with each request; the token form is offered only on a page
opened at a loopback address (``localhost``, ``127.x.x.x``, ``[::1]``), where
the header never crosses a network in clear (the server takes the token on
loopback only, too). Time left counts down on the page, from
each registration's end on the server's clock, corrected by the server's
clock in each snapshot.
"""

from __future__ import annotations

__all__ = ["PAGE_FILES"]

_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Lookup browser</title>
<link rel="stylesheet" href="/page.css">
<script src="/page.js" defer></script>
</head>
<body>
<header>
  <h1>Lookup browser</h1>
  <span id="status" class="status">connecting…</span>
</header>
<section class="controls">
  <label>Type <input id="type-filter" type="search" placeholder="e.g. Quotes" autocomplete="off"></label>
  <label>Attribute <input id="attribute-filter" type="search" placeholder="e.g. acme" autocomplete="off"></label>
  <form id="token-form">
    <label>Admin token <input id="token" type="password" autocomplete="off"></label>
    <button type="submit" id="token-use">Use</button>
    <button type="button" id="token-forget">Forget</button>
  </form>
  <span id="admin-status" class="status"></span>
</section>
<table>
  <thead><tr>
    <th>Service id</th><th>Types</th><th>Attributes</th><th>Address</th><th>Time left</th>
    <th class="admin">Lease</th><th class="admin"></th>
  </tr></thead>
  <tbody id="registrations"></tbody>
</table>
<p id="count" class="status"></p>
</body>
</html>
"""

_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
header { display: flex; align-items: baseline; gap: 1em; }
h1 { font-size: 1.4em; margin: 0 0 .6em 0; }
.controls { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: center; margin-bottom: 1em; }
.controls form { display: flex; gap: .4em; align-items: center; margin: 0; }
.controls form[hidden] { display: none; }
.status { color: #666; font-size: .9em; }
table { border-collapse: collapse; width: 100%; font-size: .92em; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f3f3f3; }
td.id, td.address, td.lease { font-family: ui-monospace, monospace; font-size: .88em; word-break: break-all; }
td.left, td.lease { white-space: nowrap; }
td.left { font-variant-numeric: tabular-nums; }
tr.expired td { color: #aaa; }
.attribute { display: block; }
.attribute .class { color: #555; }
body:not(.admin-view) .admin { display: none; }
button.evict { color: #a00; }
"""

_JS = r"""
"use strict";
(function () {
  const TOKEN_HEADER = "X-Admin-Token";
  const registrations = new Map();   // service id -> registration (as the server sent it)
  let offset = 0;                    // the server's clock minus ours, in ms (from each snapshot)
  let token = null;                  // the admin token: in this page's memory only
  let stream = null;                 // the AbortController of the stream read now
  const rows = document.getElementById("registrations");
  // the token goes in clear over plain HTTP: offered only where it cannot leave this machine
  const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(location.hostname);

  function text(tag, content, className) {
    const element = document.createElement(tag);
    element.textContent = content;
    if (className) element.className = className;
    return element;
  }

  function attributeText(attribute) {
    const fields = Object.entries(attribute.fields || {})
      .map(([name, value]) => name + "=" + (typeof value === "string" ? value : JSON.stringify(value)));
    return attribute["class"] + "(" + fields.join(", ") + ")";
  }

  function secondsLeft(registration) {
    return (registration.expires - (Date.now() + offset)) / 1000;
  }

  function leftText(seconds) {
    return seconds > 0 ? seconds.toFixed(1) + " s" : "expired";
  }

  function row(registration) {
    const tr = document.createElement("tr");
    tr.dataset.serviceId = registration.id;
    tr.appendChild(text("td", registration.id, "id"));
    tr.appendChild(text("td", registration.types.join(", "), "types"));
    const attributes = document.createElement("td");
    attributes.className = "attributes";
    for (const attribute of registration.attributes) {
      attributes.appendChild(text("span", attributeText(attribute), "attribute"));
    }
    tr.appendChild(attributes);
    tr.appendChild(text("td", registration.address, "address"));
    tr.appendChild(text("td", leftText(secondsLeft(registration)), "left"));
    tr.appendChild(text("td", registration.lease || "", "lease admin"));
    const action = document.createElement("td");
    action.className = "admin";
    if (registration.lease) {
      const button = text("button", "Evict", "evict");
      button.type = "button";
      button.addEventListener("click", () => evict(registration));
      action.appendChild(button);
    }
    tr.appendChild(action);
    tr.hidden = !shown(registration);
    return tr;
  }

  function shown(registration) {
    const type = document.getElementById("type-filter").value.trim().toLowerCase();
    const attribute = document.getElementById("attribute-filter").value.trim().toLowerCase();
    if (type && !registration.types.some((name) => name.toLowerCase().includes(type))) return false;
    if (attribute && !registration.attributes.some(
      (each) => attributeText(each).toLowerCase().includes(attribute))) return false;
    return true;
  }

  function findRow(id) {
    for (const tr of rows.children) if (tr.dataset.serviceId === id) return tr;
    return null;
  }

  function put(registration) {
    registrations.set(registration.id, registration);
    const fresh = row(registration);
    const old = findRow(registration.id);
    if (old) rows.replaceChild(fresh, old); else rows.appendChild(fresh);
  }

  function gone(id) {
    registrations.delete(id);
    const old = findRow(id);
    if (old) old.remove();
  }

  function redraw() {
    rows.replaceChildren(...Array.from(registrations.values(), row));
    count();
  }

  function count() {
    const visible = Array.from(rows.children).filter((tr) => !tr.hidden).length;
    document.getElementById("count").textContent =
      visible + " of " + registrations.size + " registration(s) shown";
  }

  function tick() {
    for (const tr of rows.children) {
      const registration = registrations.get(tr.dataset.serviceId);
      if (!registration) continue;
      const seconds = secondsLeft(registration);
      tr.querySelector("td.left").textContent = leftText(seconds);
      tr.classList.toggle("expired", seconds <= 0);
    }
  }

  function handle(message) {
    if (message.kind === "snapshot") {
      offset = message.now - Date.now();
      registrations.clear();
      for (const registration of message.registrations) registrations.set(registration.id, registration);
      redraw();
    } else if (message.kind === "put") {
      put(message.registration);
      count();
    } else if (message.kind === "renewed") {
      const registration = registrations.get(message.id);
      if (registration) registration.expires = message.expires;
    } else if (message.kind === "gone") {
      gone(message.id);
      count();
    } else if (message.kind === "follower") {
      registrations.clear();
      redraw();
      status(message.leader ? "not leading; the leader is " + message.leader : "not leading; no leader known now");
    }
  }

  function status(message) {
    document.getElementById("status").textContent = message;
  }

  function adminStatus(message) {
    document.getElementById("admin-status").textContent = message;
  }

  async function read(controller) {
    const headers = token === null ? {} : {[TOKEN_HEADER]: token};
    const response = await fetch("/events", {headers: headers, signal: controller.signal, cache: "no-store"});
    if (response.status === 403 && token !== null) {
      token = null;
      document.body.classList.remove("admin-view");
      adminStatus("token refused");
      return;
    }
    if (!response.ok) throw new Error("the server answered " + response.status);
    status("live");
    document.body.classList.toggle("admin-view", token !== null);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      buffered += value;
      let end;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const event = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        for (const line of event.split("\n")) {
          if (line.startsWith("data: ")) handle(JSON.parse(line.slice(6)));
        }
      }
    }
  }

  function connect() {
    if (stream) stream.abort();
    const controller = new AbortController();
    stream = controller;
    read(controller).catch((error) => {
      if (controller.signal.aborted) return;
      status("disconnected (" + error.message + "); reconnecting…");
    }).finally(() => {
      if (stream === controller && !controller.signal.aborted) {
        status("reconnecting…");
        setTimeout(connect, 1000);
      }
    });
  }

  async function evict(registration) {
    if (token === null) return;
    const response = await fetch("/evict", {
      method: "POST", cache: "no-store",
      headers: {"Content-Type": "application/json", [TOKEN_HEADER]: token},
      body: JSON.stringify({lease: registration.lease}),
    });
    const answer = await response.json().catch(() => ({}));
    adminStatus(response.ok ? "evicted " + registration.id : "evict refused: " + (answer.error || response.status));
  }

  if (!LOOPBACK) {
    document.getElementById("token-form").hidden = true;
    adminStatus("read-only here: the admin token is taken at localhost only");
  }
  document.getElementById("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const field = document.getElementById("token");
    token = field.value || null;
    field.value = "";
    adminStatus(token === null ? "" : "token in use (this page only)");
    connect();
  });
  document.getElementById("token-forget").addEventListener("click", () => {
    token = null;
    document.body.classList.remove("admin-view");
    adminStatus("");
    connect();
  });
  for (const id of ["type-filter", "attribute-filter"]) {
    document.getElementById(id).addEventListener("input", redraw);
  }
  setInterval(tick, 200);
  connect();
})();
"""

#: path: (content type, body)
PAGE_FILES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html; charset=utf-8", _HTML.encode()),
    "/page.js": ("text/javascript; charset=utf-8", _JS.encode()),
    "/page.css": ("text/css; charset=utf-8", _CSS.encode()),
}
