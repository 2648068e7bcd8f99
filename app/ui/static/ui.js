// The owner's page: the only script it runs (served by the process; no inline script is
// allowed by its Content-Security-Policy). Everything it puts on the page goes in as
// text (textContent), never as HTML.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", () => {
      const source = document.getElementById(button.dataset.copy);
      if (!source) return;
      navigator.clipboard.writeText(source.textContent).then(
        () => { button.textContent = "Copied"; },
        () => { button.textContent = "Select and copy"; });
    });
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});

// --- activity (app/ui/activity.py): poll /ui/activity/rows for the rows after the table's
// cursor, every POLL_MS, on the activity page only (the table with data-activity-rows).
// Rows are built with createElement and textContent, never as HTML.
(() => {
  const POLL_MS = 2000;
  const MAX_SHOWN = 2000;

  function cell(tr, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    tr.appendChild(td);
    return td;
  }

  function rowOf(r) {
    const tr = document.createElement("tr");
    tr.className = "fresh";
    cell(tr, r.ts);
    if (r.raw) {
      tr.classList.add("raw");
      const td = cell(tr, "");
      td.colSpan = 6;
      const code = document.createElement("code");
      code.textContent = r.raw;
      td.appendChild(code);
      return tr;
    }
    cell(tr, r.outcome, r.outcome === "DENY" ? "deny" : "allow");
    cell(tr, r.root);
    cell(tr, r.op);
    const path = cell(tr, "");
    const code = document.createElement("code");
    code.textContent = r.path;
    path.appendChild(code);
    cell(tr, r.rule);
    const who = cell(tr, r.client);
    if (r.peer) {
      const peer = document.createElement("span");
      peer.className = "note";
      peer.textContent = " (" + r.peer + ")";
      who.appendChild(peer);
    }
    return tr;
  }

  function start(table) {
    const body = table.tBodies[0];
    let cursor = table.dataset.cursor || "~0";
    let busy = false;
    async function poll() {
      if (busy) return;
      busy = true;
      try {
        const url = new URL(table.dataset.activityRows, window.location.origin);
        url.searchParams.set("after", cursor);
        const answer = await fetch(url, {credentials: "same-origin", cache: "no-store"});
        if (!answer.ok) return;
        const got = await answer.json();
        for (const r of got.rows) body.insertBefore(rowOf(r), body.firstChild);
        while (body.rows.length > MAX_SHOWN) body.deleteRow(-1);
        if (typeof got.cursor === "string") {
          cursor = got.cursor;
          table.dataset.cursor = cursor;
        }
        const note = document.getElementById("activity-window");
        if (note && typeof got.window === "string") {
          note.textContent = "From the audit log: " + got.window +
            ". Newest first; new calls appear as they happen.";
        }
      } catch (e) {
        // the server is away or restarting: try again at the next tick
      } finally {
        busy = false;
      }
    }
    window.setInterval(poll, POLL_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const table = document.querySelector("table[data-activity-rows]");
    if (table) start(table);
  });
})();
// --- end activity ---
