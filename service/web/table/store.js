/* What this browser keeps in localStorage, under "rummypf.": the pinned server key,
   each hand's seed until the hand ends (docs/fairness.md §5), the arrangement of the
   cards, the evidence, the table's log, the seat the player had; signing out forgets
   the arrangements and logs (forgetCards).  No credential: the session is an HttpOnly
   cookie no script can read (docs/api.md, "Sessions"). */

const LS = "rummypf.";

export const store = {
  get(name) {
    try {
      return window.localStorage.getItem(LS + name);
    } catch (e) {
      return null;
    }
  },
  set(name, value) {
    try {
      window.localStorage.setItem(LS + name, value);
    } catch (e) {
      /* storage full or disabled: the page still works for this visit */
    }
  },
  remove(name) {
    try {
      window.localStorage.removeItem(LS + name);
    } catch (e) {
      /* nothing to do */
    }
  },
  getJSON(name, fallback) {
    const text = store.get(name);
    if (text === null) return fallback;
    try {
      return JSON.parse(text);
    } catch (e) {
      return fallback;
    }
  },
  setJSON(name, value) {
    store.set(name, JSON.stringify(value));
  },
  /** Remove every entry whose name begins with one of `prefixes`. */
  removeAll(prefixes) {
    try {
      const names = [];
      for (let k = 0; k < window.localStorage.length; k++) {
        const key = window.localStorage.key(k);
        if (key && prefixes.some((p) => key.startsWith(LS + p))) names.push(key);
      }
      for (const key of names) window.localStorage.removeItem(key);
    } catch (e) {
      /* storage disabled: nothing was kept */
    }
  },
};

/** On sign-out: what shows the player's cards — the arrangements of its hands and its
    tables' logs — so that the next person at a shared browser does not read a live
    hand's cards.  Seeds and the evidence of ended hands stay (a seed is needed to
    reveal, evidence to dispute); the evidence of a hand still in play is downloaded
    and forgotten by the sign-out itself (main.js): a closed draw's ack holds all of
    its record but the card, and its ``h`` names the card among 106 guesses (the
    audit h87). */
export function forgetCards(playerId) {
  store.removeAll(["arr." + playerId + ".", "log." + playerId + "."]);
}


// ------------------------------------------------------------------ seeds (§5)

const B = () => window.RummyPF.bytes;

function seedName(playerId, tableId, handNo) {
  return "seed." + playerId + "." + tableId + "." + handNo;
}

/** This hand's 32-byte seed (hex), drawn once and kept until the hand ends, so that a reload can still reveal it. */
export function seedFor(playerId, tableId, handNo) {
  const name = seedName(playerId, tableId, handNo);
  let seed = store.get(name);
  if (!seed || !B().isHex(seed, 32)) {
    seed = B().bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
    store.set(name, seed);
  }
  return seed;
}

export function knownSeed(playerId, tableId, handNo) {
  const seed = store.get(seedName(playerId, tableId, handNo));
  return seed && B().isHex(seed, 32) ? seed : null;
}

export function forgetSeed(playerId, tableId, handNo) {
  store.remove(seedName(playerId, tableId, handNo));
}
