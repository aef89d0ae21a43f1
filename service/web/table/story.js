/* What happened, in words: each event of a hand (docs/api.md, update pushes) as a
   line of the table's log.  A line is made of parts — strings, and {name} for a
   person's name, shown isolated (dom.nameEl) — so a name can never reorder the
   words around it.  "You" gets the verbs and pronouns a person expects. */
import { plural } from "./dom.js";
import { short } from "./cardview.js";

/** Words for a seat: {name} of its player, or "You" (who.you) for the person. */
export function subject(who) {
  return who.you ? "You" : { name: who.name };
}

/** The same in the middle of a sentence ("the clock ran out for you"). */
export function object(who) {
  return who.you ? "you" : { name: who.name };
}

/** "plays" for a player, "play" for you. */
export const verb = (who, third, second) => (who.you ? second : third);

/** A line for one event, or null when it says nothing worth a line.  ctx: {decks,
    handNo, who(seat) → {name, you}, mine(seat) → bool}. */
export function eventLine(e, ctx) {
  const decks = ctx.decks;
  const who = e.seat === null || e.seat === undefined ? null : ctx.who(e.seat);
  const by = e.by_clock ? " (by the clock)" : "";
  switch (e.kind) {
    case "deal": {
      const first = ctx.who(e.first);
      return {
        parts: ["Hand " + ctx.handNo + " is dealt. Wild card indicator " + short(e.wild_indicator, decks) + "; the open pile starts with " + short(e.open, decks) + "; ", subject(first), " " + verb(first, "plays", "play") + " first."],
        kind: "hand",
      };
    }
    case "forfeit":
      return { parts: [subject(who), " withheld the seed and " + verb(who, "sits", "sit") + " this hand out (" + e.points + " points)."], kind: "bad" };
    case "draw":
      if (e.source === "open") return { parts: [subject(who), by + " took " + short(e.card, decks) + " from the open pile."], kind: "" };
      if (who.you && e.card !== undefined) return { parts: ["You drew " + short(e.card, decks) + " from the closed pile" + (e.by_clock ? " (the clock drew for you)" : "") + "."], kind: "" };
      return { parts: [subject(who), by + " drew from the closed pile."], kind: "" };
    case "discard":
      return { parts: [subject(who), by + " discarded " + short(e.card, decks) + "."], kind: "" };
    case "clock":
      return { parts: ["The clock ran out for ", object(who), " (" + plural(e.missed, "missed turn") + " in a row)."], kind: "bad" };
    case "drop":
      return { parts: [subject(who), (e.reason === "clock" ? (who.you ? " were" : " was") + " dropped by the clock" : " dropped") + ": " + e.points + " points."], kind: "bad" };
    case "leave":
      return { parts: [subject(who), " left the table: " + e.points + " points."], kind: "bad" };
    case "reshuffle":
      return { parts: ["The closed pile ran out: the open pile (but its top card) was reshuffled into a new closed pile of " + e.count + " cards."], kind: "" };
    case "declare":
      if (e.valid) return { parts: [subject(who), " declared — a valid hand!"], kind: "good" };
      return { parts: [subject(who), " made a wrong declare: " + e.points + " points."], kind: "bad" };
    case "end": {
      const w = ctx.who(e.winner);
      return { parts: ["The hand ends: ", object(w), " won" + (e.reason === "declare" ? " with a valid declare." : " as the last one standing.")], kind: "good" };
    }
    default:
      return null;
  }
}
