// A fast 64-bit digest of values, for telling whether something written before is written again the same (not for
// security: anyone can make two inputs of one digest on purpose). Two 32-bit lanes of multiply-xorshift hashing
// (cyrb53's, kept whole), each char mixed into both: two different inputs share a digest with a chance of about 2^-64.

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

/**
 * The digest of a list of values (text, numbers, booleans, null) as 16 lower-case hex digits: each value digested as
 * a NUL, a letter of its kind and its content (a text's chars, a NUL within it doubled; a number's 64 bits; a
 * boolean's 0 or 1), so that no two lists are digested as the same sequence. Nothing is concatenated or formatted: the
 * chars are mixed in where they are.
 */
export function valuesDigest(values: ReadonlyArray<string | number | boolean | null | undefined>): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let j = 0; j < values.length; j++) {
    const v = values[j];
    const kind = v === null || v === undefined ? 110 /* n */ : typeof v === 'string' ? 115 /* s */ : typeof v === 'number' ? 100 /* d */ : 98; /* b */
    h1 = Math.imul(h1, 2654435761); // the NUL before the kind (h ^ 0 = h)
    h2 = Math.imul(h2, 1597334677);
    h1 = Math.imul(h1 ^ kind, 2654435761);
    h2 = Math.imul(h2 ^ kind, 1597334677);
    if (kind === 115) {
      const text = v as string;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        h1 = Math.imul(h1 ^ c, 2654435761);
        h2 = Math.imul(h2 ^ c, 1597334677);
        if (c === 0) {
          // a NUL within a text is digested twice: never a NUL and a kind's letter
          h1 = Math.imul(h1, 2654435761);
          h2 = Math.imul(h2, 1597334677);
        }
      }
    } else if (kind === 100) {
      // (-0 and 0, and every NaN, are one value: as stored)
      f64[0] = (v as number) === 0 ? 0 : Number.isNaN(v) ? NaN : (v as number);
      h1 = Math.imul(h1 ^ u32[0], 2654435761);
      h2 = Math.imul(h2 ^ u32[0], 1597334677);
      h1 = Math.imul(h1 ^ u32[1], 2654435761);
      h2 = Math.imul(h2 ^ u32[1], 1597334677);
    } else if (kind === 98) {
      h1 = Math.imul(h1 ^ (v ? 1 : 0), 2654435761);
      h2 = Math.imul(h2 ^ (v ? 1 : 0), 1597334677);
    }
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 >>> 0).toString(16).padStart(8, '0') + (h1 >>> 0).toString(16).padStart(8, '0');
}
