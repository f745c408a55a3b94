// Repeated keys at the top of an event. JSON.parse keeps a repeated key's last value and DuckDB's JSON
// reader its first, so `{"event_guid":"A",...,"event_guid":"B"}` would be acknowledged as B and stored as
// A: the receiver refuses such an event (400) instead of choosing. Keys inside nested values are left as
// received (the receiver reads none of them; the store keeps the payload byte for byte).
//
// The check costs one byte loop over a body JSON.parse has already accepted (so its structure is known to
// be valid): it counts the top-level keys as written and compares the count with the parsed object's keys,
// which JSON.parse has already de-duplicated. Only a body that fails that check is decoded key by key, to
// name the repeated key.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index of the quote that closes the string whose opening quote is at `open`. */
function stringEnd(buf: Uint8Array, open: number): number {
  let k = open + 1;
  for (; k < buf.length; k++) {
    const b = buf[k];
    if (b === QUOTE) return k;
    if (b === BACKSLASH) k++; // the escaped character, a quote included, is part of the string
  }
  return k;
}

/** Calls onKey(start, end) for each key of the top-level object: the bytes between its quotes. */
function eachTopLevelKey(buf: Uint8Array, onKey: (start: number, end: number) => boolean | void): void {
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i];
    if (b === QUOTE) {
      const end = stringEnd(buf, i);
      if (expectKey && depth === 1) {
        if (onKey(i + 1, end) === false) return;
        expectKey = false;
      }
      i = end;
    } else if (b === 0x7b || b === 0x5b) {
      if (++depth === 1) expectKey = true;
    } else if (b === 0x7d || b === 0x5d) {
      depth--;
    } else if (b === 0x2c && depth === 1) {
      expectKey = true;
    }
  }
}

/** The number of keys written at the top level of the JSON object in `buf`, repeats counted. */
export function countTopLevelKeys(buf: Uint8Array): number {
  let n = 0;
  eachTopLevelKey(buf, () => {
    n++;
  });
  return n;
}

/**
 * The first key that occurs twice at the top level of the JSON object in `buf` (compared as decoded
 * strings, so `"a"` and `"\u0061"` are the same key), or null. `buf` must hold valid JSON.
 */
export function repeatedTopLevelKey(buf: Buffer): string | null {
  const seen = new Set<string>();
  let repeated: string | null = null;
  eachTopLevelKey(buf, (start, end) => {
    const raw = buf.toString('utf8', start, end);
    const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
    if (seen.has(key)) {
      repeated = key;
      return false;
    }
    seen.add(key);
  });
  return repeated;
}

/**
 * The repeated top-level key of an event JSON.parse turned into `parsed`, or null. Cheap when there is
 * none (the usual case): a count of the keys as written against the parsed object's.
 */
export function repeatedKeyOf(buf: Buffer, parsed: object): string | null {
  if (countTopLevelKeys(buf) === Object.keys(parsed).length) return null;
  return repeatedTopLevelKey(buf);
}
