// The operator page (/operator): the tables, created and closed over the REST API.
//
// The operator token lives in one variable of this module: never in localStorage,
// sessionStorage or a cookie, and never in the address. Every action is a call to
// the REST API with it (POST /api/tables, POST /api/tables/{id}/close), so the
// server checks every value and writes the action to its audit log, done or refused.
// Values are sent as typed: the server's typed error (code and message) is shown for
// a value it refuses, and the page never repairs or second-guesses one.

const FIELDS = ["seats", "point_value", "commission_bps", "turn_seconds", "max_missed_turns", "min_players", "max_away_hands"];
const INTEGER = /^-?[0-9]+$/;

let token = null; // the operator token: this page's memory only
let closing = null; // the id of the table the confirmation is about

const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function say(text) {
  $("status").textContent = text;
}

function showError(err) {
  const box = $("error");
  box.textContent = "";
  box.append(el("b", err.code), document.createTextNode(": " + err.message));
  box.hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

class ApiError extends Error {
  constructor(code, message, status) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

async function call(method, path, body) {
  const headers = {};
  if (token !== null) headers.Authorization = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch (e) {
    throw new ApiError("network", "could not reach the server (" + e.message + ")", 0);
  }
  const text = await resp.text();
  let data = null;
  try {
    data = JSON.parse(text);
  } catch (e) {
    data = null;
  }
  if (!resp.ok) {
    const err = data && data.error ? data.error : { code: "http_" + resp.status, message: text.slice(0, 200) };
    throw new ApiError(err.code, err.message, resp.status);
  }
  return data;
}

function needToken() {
  if (token !== null) return true;
  showError({ code: "unauthorized", message: "give the operator token first" });
  return false;
}

// ----------------------------------------------------------------------------- the list
function seatedCell(seated) {
  const td = el("td");
  if (!seated.length) {
    td.textContent = "nobody";
    return td;
  }
  const ul = el("ul", null, "seated");
  for (const s of seated) {
    const li = el("li");
    li.append(document.createTextNode("seat " + s.seat + ": "), el("bdi", s.name));
    ul.append(li);
  }
  td.append(ul);
  return td;
}

function row(t) {
  const tr = el("tr");
  tr.dataset.table = t.id;
  const id = el("td");
  id.append(el("code", t.id));
  tr.append(
    id,
    el("td", t.status, "status-cell"),
    el("td", t.seats),
    el("td", t.point_value + " a point · hold " + t.hold),
    el("td", t.commission_bps + " bps"),
    el("td", t.turn_seconds + " s · " + t.max_missed_turns + " missed"),
    el("td", t.min_players + " · " + t.max_away_hands),
    seatedCell(t.seated),
  );
  const act = el("td");
  if (t.status === "open") {
    const b = el("button", "Close…", "close-table");
    b.type = "button";
    b.setAttribute("aria-label", "Close table " + t.id);
    b.addEventListener("click", () => askClose(t.id));
    act.append(b);
  }
  tr.append(act);
  return tr;
}

async function refresh() {
  try {
    const data = await call("GET", "/api/tables");
    const body = $("tables-body");
    body.replaceChildren(...data.tables.map(row));
    if (!data.tables.length) {
      const tr = el("tr");
      const td = el("td", "No table yet.");
      td.colSpan = 9;
      tr.append(td);
      body.append(tr);
    }
  } catch (e) {
    showError(e);
  }
}

// ----------------------------------------------------------------------------- the token
async function useToken(ev) {
  ev.preventDefault();
  clearError();
  const given = $("token").value.trim();
  $("token").value = "";
  token = given || null;
  if (token === null) {
    $("token-state").textContent = "No token given.";
    return;
  }
  try {
    await call("GET", "/api/admin/audit?limit=1"); // any operator read: is it the token?
    $("token-state").textContent = "Token accepted (kept in this page's memory only).";
    say("Token accepted.");
  } catch (e) {
    token = null;
    $("token-state").textContent = "No token: the one given was refused.";
    showError(e);
  }
}

function forget() {
  token = null;
  clearError();
  $("token-state").textContent = "Token forgotten.";
  say("Token forgotten.");
}

// ----------------------------------------------------------------------------- create
function value(name) {
  const raw = $(name).value.trim();
  return INTEGER.test(raw) ? Number(raw) : raw; // not an integer: sent as typed, the server refuses it
}

async function create(ev) {
  ev.preventDefault();
  clearError();
  if (!needToken()) return;
  const body = {};
  for (const f of FIELDS) body[f] = value(f);
  $("create").disabled = true;
  try {
    const t = await call("POST", "/api/tables", body);
    say("Created table " + t.id + ".");
    await refresh();
  } catch (e) {
    say("Nothing was created.");
    showError(e);
  } finally {
    $("create").disabled = false;
  }
}

// ----------------------------------------------------------------------------- close
function askClose(id) {
  clearError();
  if (!needToken()) return;
  closing = id;
  $("confirm-id").textContent = id;
  $("confirm").showModal();
  $("confirm-no").focus();
}

async function confirmClose() {
  const id = closing;
  closing = null;
  $("confirm").close();
  if (id === null) return;
  try {
    const r = await call("POST", "/api/tables/" + encodeURIComponent(id) + "/close", {});
    say("Table " + id + " is " + r.status + ".");
  } catch (e) {
    showError(e);
  }
  await refresh();
}

function cancelClose() {
  closing = null;
  $("confirm").close();
  say("Nothing was closed.");
}

function start() {
  $("token-form").addEventListener("submit", useToken);
  $("forget").addEventListener("click", forget);
  $("create-form").addEventListener("submit", create);
  $("refresh").addEventListener("click", refresh);
  $("confirm-yes").addEventListener("click", confirmClose);
  $("confirm-no").addEventListener("click", cancelClose);
  $("confirm").addEventListener("cancel", () => {
    closing = null;
  });
  document.body.dataset.ready = "1";
  refresh();
}

start();
