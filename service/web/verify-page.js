/* The /verify page: reads a transcript (pasted, dropped, chosen or fetched),
   runs window.RummyPF.verifyTranscript and shows the checks and the replay. */
(function () {
  "use strict";
  const R = window.RummyPF;
  const $ = (id) => document.getElementById(id);

  const CHECK_TEXT = {
    read: "the input is strict JSON (§2)",
    format: "the transcript and every record have exactly the fields and types of §13; every key is a strict Ed25519 key, one key a seat",
    signature: "the server's signatures on the transcript, the header and the commitments",
    player_signatures: "every commitment, reveal and move is signed by its player's key",
    server_commit: "the revealed server seed is the one committed to before the hand",
    player_seeds: "every revealed player seed matches its commitment",
    deck: "the deck is the one derived from the server seed and the players' seeds",
    deal: "the deal is exactly what that deck gives",
    replay: "every action was legal and had exactly the logged effects",
    time: "the clock never moved for a seat before its time; seed windows were kept",
    points: "every count is the best arrangement of the cards (D13)",
    penalties: "drops, departures, wrong declares and withheld reveals were charged right",
    settlement: "the tokens add up (D19)",
    chain: "the hash chain of the log and its head; hand 1 starts from 64 zeros",
    evidence: "your evidence is for this hand, signed by the right keys, agrees with the log, and no seat was charged by the clock while the house owed it time (D35)",
  };

  const STATUS_TEXT = {
    playing: "playing",
    declared: "declared",
    wrong_declare: "wrong declare",
    dropped: "dropped",
    left: "left",
    forfeit: "sat out (withheld)",
  };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = v;
        else if (k.startsWith("data-")) e.setAttribute(k, v);
        else e.setAttribute(k, v);
      }
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }

  // ------------------------------------------------------------------ input

  const state = { transcriptBytes: null, evidenceBytes: null, result: null, step: 0 };
  const reading = new Set(); // files being read (setupDrop)

  function defaultServer() {
    const p = window.location.protocol;
    return p === "http:" || p === "https:" ? window.location.origin : "";
  }

  function setupDrop(zoneId, inputId, textareaId, nameId, key) {
    const zone = $(zoneId);
    const input = $(inputId);
    const area = $(textareaId);
    const take = async (file) => {
      if (!file) return;
      $(nameId).textContent = file.name + " (" + file.size + " bytes)";
      if (file.size > R.jsonStrict.MAX_BYTES) {
        // refused without reading it whole (§2)
        state[key] = { tooLarge: file.size };
        area.value = "";
        if (key === "transcriptBytes") runVerify();
        return;
      }
      const bytes = new Uint8Array(await file.arrayBuffer());
      state[key] = bytes;
      area.value = new TextDecoder("utf-8").decode(bytes);
      if (key === "transcriptBytes") runVerify();
    };
    // A file is read asynchronously: Verify waits for every read still under way
    // (runVerify), so a click right after choosing the evidence file does not verify
    // without it.
    const read = (file) => {
      const p = take(file);
      reading.add(p);
      p.finally(() => reading.delete(p));
    };
    input.addEventListener("change", () => read(input.files[0]));
    for (const target of [zone, area]) {
      target.addEventListener("dragover", (e) => {
        e.preventDefault();
        zone.classList.add("over");
      });
      target.addEventListener("dragleave", () => zone.classList.remove("over"));
      target.addEventListener("drop", (e) => {
        e.preventDefault();
        zone.classList.remove("over");
        if (e.dataTransfer.files.length) read(e.dataTransfer.files[0]);
        else {
          const text = e.dataTransfer.getData("text/plain");
          if (text) {
            area.value = text;
            state[key] = null;
          }
        }
      });
    }
    area.addEventListener("input", () => {
      state[key] = null;
      $(nameId).textContent = "";
    });
  }

  async function fetchTranscript() {
    const server = $("server").value.trim().replace(/\/+$/, "");
    const id = $("hand-id").value.trim();
    if (!id) {
      showMessage("Give a hand id to fetch.");
      return;
    }
    const url = server + "/api/hands/" + encodeURIComponent(id) + "/transcript";
    $("busy").hidden = false;
    $("busy").textContent = "fetching " + url + " …";
    try {
      const resp = await fetch(url, { headers: { Accept: "application/json" } });
      const text = await resp.text();
      if (!resp.ok) {
        let msg = text;
        try {
          msg = JSON.parse(text).error.message;
        } catch (e) {
          /* not an API error */
        }
        showMessage("The server answered " + resp.status + ": " + msg);
        return;
      }
      $("transcript").value = text;
      state.transcriptBytes = null;
      $("transcript-file-name").textContent = "fetched from " + url;
      await runVerify();
    } catch (e) {
      showMessage("Could not fetch " + url + ": " + e.message);
    } finally {
      $("busy").hidden = true;
      $("busy").textContent = "verifying…";
    }
  }

  function showMessage(text) {
    $("result-panel").hidden = false;
    $("verdict").className = "verdict bad";
    $("verdict").textContent = text;
    $("checks").replaceChildren();
    $("failure").hidden = true;
    $("warnings-box").hidden = true;
    $("summary").replaceChildren();
    $("key-info").replaceChildren();
    $("evidence-info").hidden = true;
    $("replay-panel").hidden = true;
  }

  async function runVerify() {
    if (reading.size) await Promise.allSettled([...reading]);
    let input = state.transcriptBytes;
    if (input && input.tooLarge) {
      render({
        ok: false,
        failure: { check: "read", message: "the file is larger than 16 MiB (" + input.tooLarge + " bytes): refused without reading it", record: null, expected: null, found: null },
        checks_passed: [],
        checks_skipped: [],
        warnings: [],
        summary: {},
        replay: [],
      });
      return;
    }
    if (!input) input = $("transcript").value;
    if (typeof input === "string" && input.trim() === "") {
      showMessage("Paste, drop or fetch a transcript first.");
      return;
    }
    if (state.evidenceBytes && state.evidenceBytes.tooLarge) {
      render({
        ok: false,
        failure: { check: "read", message: "the evidence file is larger than 16 MiB: refused without reading it", record: null, expected: null, found: null },
        checks_passed: [],
        checks_skipped: [],
        warnings: [],
        summary: {},
        replay: [],
      });
      return;
    }
    let evidence = state.evidenceBytes;
    if (!evidence) evidence = $("evidence").value.trim() === "" ? null : $("evidence").value;
    $("busy").hidden = false;
    document.body.dataset.state = "verifying";
    try {
      const res = await R.verifyTranscript(input, { key: $("key").value, evidence, allowV1: $("allow-v1").checked });
      render(res);
    } catch (e) {
      showMessage("The verifier failed: " + e.message);
    } finally {
      $("busy").hidden = true;
      document.body.dataset.state = "done";
    }
  }

  // ------------------------------------------------------------------ cards

  function cardEl(id, decks, opts) {
    opts = opts || {};
    const d = R.cards.describe(id, decks);
    const face = R.cards.face(id, decks);
    const wr = opts.wildRank;
    const wild = d.joker || (wr !== null && wr !== undefined && d.rank === wr);
    let cls = "card";
    let rank;
    let suit;
    if (d.joker) {
      cls += " joker";
      rank = "JK";
      suit = "\u2605";
    } else {
      rank = face[0] === "T" ? "10" : face[0];
      suit = R.cards.SUIT_SYMBOLS[face[1]];
      cls += face[1] === "H" || face[1] === "D" ? " red" : " black";
    }
    if (wild && !opts.noWild) cls += " wild";
    if (opts.hl) cls += " hl";
    if (opts.big) cls += " big";
    const title = (d.joker ? "printed joker" : rank + suit) + " (id " + id + ")" + (wild ? ", wild" : "");
    return el("span", { class: cls, title, "data-card": id, "data-face": face }, el("b", null, rank), el("i", null, suit));
  }

  function cardsRow(ids, decks, wildRank, highlight, sort) {
    let list = ids.slice();
    if (sort) {
      const key = (id) => {
        const d = R.cards.describe(id, decks);
        const wild = d.joker || d.rank === wildRank;
        return (wild ? 0 : 1 + d.suit) * 100 + (d.joker ? 99 : d.rank);
      };
      list.sort((a, b) => key(a) - key(b) || a - b);
    }
    return el("span", { class: "cards" }, list.map((id) => cardEl(id, decks, { wildRank, hl: highlight && highlight.has(id) })));
  }

  // ------------------------------------------------------------------ verdict

  function fmtValue(v) {
    if (v === null || v === undefined) return "—";
    return typeof v === "string" ? v : JSON.stringify(v);
  }

  /** Where a failure is: the evidence item (by its position in the file) and the log record. */
  function whereText(f) {
    const parts = [];
    if (f.item !== undefined) parts.push("evidence item " + f.item);
    if (f.record !== null) parts.push("log record " + f.record);
    return parts.length ? parts.join(" · ") : "—";
  }

  function render(res) {
    state.result = res;
    $("result-panel").hidden = false;
    const v = $("verdict");
    const counts = res.summary ? res.summary.evidence : null;
    if (res.ok) {
      v.className = "verdict good";
      v.textContent =
        "Verified: every check passed" +
        (res.checks_skipped.length ? " (" + res.checks_skipped.length + " skipped)" : "") +
        (counts && counts.is_list ? "; evidence: " + counts.applied + " of " + counts.total + " items applied" : "") +
        ".";
    } else if (res.failure.check === "read") {
      v.className = "verdict bad";
      v.textContent = "Unreadable input: " + res.failure.message;
    } else {
      v.className = "verdict bad";
      v.textContent = "Check failed: " + res.failure.check + (res.failure.record !== null ? " (record " + res.failure.record + ")" : "");
    }
    v.dataset.ok = String(res.ok);

    // key
    const ki = $("key-info");
    ki.replaceChildren();
    const s = res.summary || {};
    if (s.key_fingerprint) {
      ki.append(
        el("span", { class: "label" }, "server key fingerprint"),
        el("code", { id: "key-fingerprint" }, s.key_fingerprint),
        el("span", { class: s.key_pinned ? "pin pinned" : "pin unpinned", id: "key-pinned", "data-pinned": String(!!s.key_pinned) }, s.key_pinned ? "pinned by you" : "not pinned: the key the transcript names"),
      );
    }

    renderEvidenceCounts(counts, res);

    // checks
    const ol = $("checks");
    ol.replaceChildren();
    const names = res.checks || (res.failure && res.failure.check === "read" ? ["read"] : []);
    const failed = res.failure ? res.failure.check : null;
    let reachedFailure = false;
    const list = failed === "read" ? ["read"] : names;
    for (const name of list) {
      let status;
      if (res.checks_passed.includes(name)) status = "passed";
      else if (res.checks_skipped.includes(name)) status = "skipped";
      else if (name === failed && !reachedFailure) {
        status = "failed";
        reachedFailure = true;
      } else status = "not-run";
      let reason = status === "skipped" && res.skip_reasons ? res.skip_reasons[name] : null;
      if (name === "evidence" && counts) reason = evidenceCountText(counts) + (status === "not-run" ? " (not checked: an earlier check failed)" : "");
      const mark = { passed: "\u2714", failed: "\u2718", skipped: "\u2013", "not-run": "\u00B7" }[status];
      ol.append(
        el(
          "li",
          { class: "check " + status, "data-check": name, "data-status": status },
          el("span", { class: "mark" }, mark),
          el("span", { class: "name" }, name),
          el("span", { class: "status" }, status === "not-run" ? "not run" : status),
          el("span", { class: "what" }, reason ? reason : CHECK_TEXT[name] || ""),
        ),
      );
    }

    // failure
    const fb = $("failure");
    if (res.failure) {
      const f = res.failure;
      fb.hidden = false;
      fb.replaceChildren(
        el("h2", null, "What failed"),
        el(
          "dl",
          null,
          el("dt", null, "check"),
          el("dd", { id: "failure-check" }, f.check),
          el("dt", null, "message"),
          el("dd", { id: "failure-message" }, f.message),
          el("dt", null, "record"),
          el("dd", { id: "failure-record" }, whereText(f)),
          el("dt", null, "expected"),
          el("dd", { id: "failure-expected" }, el("code", null, fmtValue(f.expected))),
          el("dt", null, "found"),
          el("dd", { id: "failure-found" }, el("code", null, fmtValue(f.found))),
        ),
      );
    } else fb.hidden = true;

    // warnings
    const wl = $("warnings");
    wl.replaceChildren();
    for (const w of res.warnings || []) wl.append(el("li", { "data-code": w.code }, el("code", null, w.code), " ", w.message));
    $("warnings-box").hidden = !(res.warnings && res.warnings.length);

    renderSummary(s);
    setupReplay(res);
  }

  function evidenceCountText(c) {
    if (!c.is_list) return "the evidence file is not a list of items";
    return (
      c.applied + " of " + c.total + " item" + (c.total === 1 ? "" : "s") + " applied to this hand · " +
      c.other_hands + " for other hands · " + c.after_void + " after a void" + (c.malformed ? " · " + c.malformed + " not of §15's forms" : "")
    );
  }

  /** The counts of the evidence (§14 check 14), shown whatever the verdict. */
  function renderEvidenceCounts(c, res) {
    const box = $("evidence-info");
    if (!c) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    const checked = res.checks_passed.includes("evidence") || (res.failure && res.failure.check === "evidence");
    box.hidden = false;
    box.dataset.applied = String(c.applied);
    box.dataset.total = String(c.total);
    box.dataset.otherHands = String(c.other_hands);
    box.dataset.afterVoid = String(c.after_void);
    box.className = "evidence-info" + (c.applied === 0 ? " none" : "");
    const parts = [el("span", { class: "label" }, "Evidence"), el("span", { id: "evidence-count" }, evidenceCountText(c))];
    if (!checked) parts.push(el("span", { class: "small" }, "(not checked: an earlier check failed)"));
    box.replaceChildren(...parts);
  }

  function renderSummary(s) {
    const box = $("summary");
    box.replaceChildren();
    if (!s.table_id) return;
    const rows = [
      ["protocol", s.protocol],
      ["table", s.table_id],
      ["hand", String(s.hand_no)],
    ];
    if (s.rules) {
      rows.push(["table rules", s.rules.seats + " seats, " + s.rules.point_value + " HT a point, commission " + s.rules.commission_bps / 100 + "%, " + s.rules.turn_seconds + " s a turn, dropped after " + s.rules.max_missed_turns + " missed"]);
    }
    if (s.seats) rows.push(["players", s.seats.map((x) => "seat " + x.seat + ": " + x.player_id).join(" · ")]);
    if (s.dealer !== undefined) rows.push(["dealer", "seat " + s.dealer]);
    if (s.void) rows.push(["void", s.void_reason]);
    if (s.winner !== undefined) rows.push(["winner", "seat " + s.winner + " (" + s.reason + ")"]);
    if (s.server_seed !== undefined) rows.push(["server seed", s.server_seed === "" ? "not revealed" : s.server_seed]);
    const dl = el("dl", null);
    for (const [k, v] of rows) dl.append(el("dt", null, k), el("dd", null, v));
    box.append(dl);
    if (s.settlement) {
      const t = el("table", { class: "settle", id: "settlement-table" }, el("tr", null, el("th", null, "seat"), el("th", null, "points"), el("th", null, "tokens (HT)")));
      for (const seat of Object.keys(s.settlement.points)) {
        const d = s.settlement.deltas[seat];
        t.append(el("tr", null, el("td", null, seat), el("td", null, String(s.settlement.points[seat])), el("td", { class: d >= 0 ? "plus" : "minus" }, (d > 0 ? "+" : "") + d)));
      }
      box.append(t, el("p", { class: "small" }, "as the transcript states it: pot " + s.settlement.pot + " HT, house commission " + s.settlement.commission + " HT"));
    }
  }

  // ------------------------------------------------------------------ replay

  function setupReplay(res) {
    const steps = res.replay || [];
    const panel = $("replay-panel");
    if (!steps.length) {
      panel.hidden = true;
      return;
    }
    panel.hidden = false;
    const slider = $("step-slider");
    slider.max = String(steps.length - 1);
    showStep(0);
  }

  function highlightOf(e) {
    const h = new Set();
    if (e.kind === "draw") h.add(e.data.source === "open" ? e.data.card : e.private.card);
    if (e.kind === "discard") h.add(e.data.card);
    if (e.kind === "declare") h.add(e.private.finish);
    return h;
  }

  function showStep(k) {
    const res = state.result;
    const steps = res.replay;
    k = Math.max(0, Math.min(steps.length - 1, k));
    state.step = k;
    const step = steps[k];
    const s = res.summary;
    const decks = s.decks;
    const snap = step.state;
    const wildRank = snap.indicator === null ? null : R.cards.wildRankOf(R.cards.describe(snap.indicator, decks));
    $("step-slider").value = String(k);
    $("step-count").textContent = "step " + (k + 1) + " of " + steps.length;
    $("step-count").dataset.step = String(k);
    $("step-text").replaceChildren(
      el("span", { class: "rec" }, "record " + step.record + (step.t !== null ? " · " + new Date(step.t).toISOString().replace("T", " ").replace("Z", " UTC") : "")),
      el("span", { class: "ev ev-" + step.event.kind, id: "step-description", "data-kind": step.event.kind }, step.text),
    );
    if (k === steps.length - 1 && res.failure && res.failure.check === "replay") {
      $("step-text").append(el("span", { class: "stopped" }, "The replay stops here: record " + res.failure.record + " does not replay — " + res.failure.message));
    }
    const hl = highlightOf(step.event);
    const players = new Map((s.seats || []).map((x) => [x.seat, x.player_id]));

    const info = el(
      "div",
      { class: "piles" },
      el("div", { class: "pile" }, el("div", { class: "label" }, "wild indicator"), snap.indicator === null ? "—" : cardEl(snap.indicator, decks, { wildRank, big: true }), el("div", { class: "small" }, wildRank === null ? "only printed jokers are wild" : "wild rank: " + (R.cards.RANKS[wildRank] === "T" ? "10" : R.cards.RANKS[wildRank]))),
      el("div", { class: "pile" }, el("div", { class: "label" }, "open pile"), snap.open.length ? cardEl(snap.open[snap.open.length - 1], decks, { wildRank, big: true, hl: hl.has(snap.open[snap.open.length - 1]) }) : el("span", { class: "empty" }, "empty"), el("div", { class: "small" }, snap.open.length + " card" + (snap.open.length === 1 ? "" : "s"))),
      el("div", { class: "pile" }, el("div", { class: "label" }, "closed pile"), el("span", { class: "card back big" }, el("b", null, String(snap.closed_count))), el("div", { class: "small" }, snap.reshuffles ? "reshuffled " + snap.reshuffles + "×" : "")),
      el("div", { class: "pile turn" }, el("div", { class: "label" }, "turn"), el("div", { class: "turn-no" }, snap.phase === "ended" ? "ended" : "#" + snap.turn_no + " · seat " + snap.turn), el("div", { class: "small" }, snap.phase === "ended" ? "" : snap.phase + " phase")),
    );

    const seatsBox = el("div", { class: "seats" });
    const sort = $("sort-cards").checked;
    for (const seat of Object.keys(snap.seats)
      .map(Number)
      .sort((a, b) => a - b)) {
      const st = snap.seats[seat];
      const onTurn = snap.phase !== "ended" && snap.turn === seat;
      const ev = step.event;
      const gone = st.cards.length === 0 && ev.seat === seat && ev.private && ev.private.cards ? ev.private.cards : null;
      seatsBox.append(
        el(
          "div",
          { class: "seat" + (onTurn ? " on-turn" : "") + (ev.seat === seat ? " acting" : "") + " st-" + st.status, "data-seat": seat },
          el(
            "div",
            { class: "seat-head" },
            el("b", null, "Seat " + seat),
            el("span", { class: "pid" }, players.get(seat) || ""),
            el("span", { class: "badge" }, STATUS_TEXT[st.status] || st.status),
            st.points !== null ? el("span", { class: "pts", "data-points": st.points }, st.points + " pts") : null,
            st.missed ? el("span", { class: "missed" }, "missed " + st.missed) : null,
          ),
          st.cards.length ? cardsRow(st.cards, decks, wildRank, hl, sort) : el("span", { class: "empty" }, gone ? "out of play: " : "no cards"),
          gone ? cardsRow(gone, decks, wildRank, null, sort) : null,
        ),
      );
    }
    $("table").replaceChildren(info, seatsBox);
    renderFinal(k === steps.length - 1 && step.event.kind === "end" ? step : null, decks, wildRank, players);
  }

  function renderFinal(step, decks, wildRank, players) {
    const box = $("final");
    if (!step) {
      box.hidden = true;
      box.replaceChildren();
      return;
    }
    box.hidden = false;
    const res = state.result;
    const d = step.event.data;
    const expected = res.summary.expected_result;
    const settlement = expected ? expected.settlement : d.settlement;
    const counted = res.summary.counted || {};
    // the valid declare's groups, as logged (judged by B.3)
    let declared = null;
    for (const st of res.replay) if (st.event.kind === "declare" && st.event.data.valid) declared = st.event;
    const t = el("table", { class: "final-table", id: "final-table" }, el("tr", null, el("th", null, "seat"), el("th", null, "how it ended"), el("th", null, "groups and loose cards"), el("th", null, "points"), el("th", null, "tokens (HT)")));
    for (const seat of Object.keys(settlement.points)
      .map(Number)
      .sort((a, b) => a - b)) {
      const st = step.state.seats[seat];
      let how = STATUS_TEXT[st.status] || st.status;
      if (seat === d.winner) how = "won (" + (d.reason === "declare" ? "valid declare" : "last one standing") + ")";
      else if (counted[seat]) how = "counted";
      const cell = el("td", { class: "groups" });
      if (declared && declared.seat === seat) {
        for (const g of declared.data.groups) cell.append(el("span", { class: "group" }, cardsRow(g, decks, wildRank, null, false)));
      } else if (counted[seat]) {
        const c = counted[seat];
        for (const g of c.groups) cell.append(el("span", { class: "group" }, cardsRow(g, decks, wildRank, null, false)));
        if (c.loose.length) cell.append(el("span", { class: "loose" }, el("span", { class: "small" }, "loose "), cardsRow(c.loose, decks, wildRank, null, true)));
      } else if (d.hands[seat]) {
        cell.append(cardsRow(d.hands[seat], decks, wildRank, null, true));
      } else cell.append(el("span", { class: "small" }, st.status === "forfeit" ? "not dealt in" : "cards out of play"));
      const delta = settlement.deltas[seat];
      t.append(
        el(
          "tr",
          { "data-seat": seat },
          el("td", null, "Seat " + seat, el("div", { class: "small" }, players.get(seat) || "")),
          el("td", null, how),
          cell,
          el("td", { class: "num", "data-points": settlement.points[seat] }, String(settlement.points[seat])),
          el("td", { class: "num " + (delta >= 0 ? "plus" : "minus"), "data-delta": delta }, (delta > 0 ? "+" : "") + delta),
        ),
      );
    }
    box.replaceChildren(el("h3", null, "The end of the hand"), t, el("p", { class: "small" }, "pot " + settlement.pot + " HT · house commission " + settlement.commission + " HT (" + settlement.commission_bps / 100 + "%) · " + settlement.point_value + " HT a point"));
  }

  // ------------------------------------------------------------------ wiring

  function init() {
    $("server").value = defaultServer();
    setupDrop("drop-transcript", "file-transcript", "transcript", "transcript-file-name", "transcriptBytes");
    setupDrop("drop-evidence", "file-evidence", "evidence", "evidence-file-name", "evidenceBytes");
    $("verify").addEventListener("click", runVerify);
    $("fetch").addEventListener("click", fetchTranscript);
    $("hand-id").addEventListener("keydown", (e) => {
      if (e.key === "Enter") fetchTranscript();
    });
    $("step-first").addEventListener("click", () => showStep(0));
    $("step-prev").addEventListener("click", () => showStep(state.step - 1));
    $("step-next").addEventListener("click", () => showStep(state.step + 1));
    $("step-last").addEventListener("click", () => showStep(state.result.replay.length - 1));
    $("step-slider").addEventListener("input", () => showStep(Number($("step-slider").value)));
    $("sort-cards").addEventListener("change", () => showStep(state.step));
    document.addEventListener("keydown", (e) => {
      if ($("replay-panel").hidden || ["INPUT", "TEXTAREA"].includes(document.activeElement.tagName)) return;
      if (e.key === "ArrowRight") showStep(state.step + 1);
      if (e.key === "ArrowLeft") showStep(state.step - 1);
    });
    const params = new URLSearchParams(window.location.search);
    if (params.get("hand")) {
      $("hand-id").value = params.get("hand");
      if (params.get("key")) $("key").value = params.get("key");
      fetchTranscript();
    }
    document.body.dataset.ready = "true";
  }

  window.RummyPFPage = { runVerify, showStep, render };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
