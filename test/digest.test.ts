// lib/digest.ts: what tells an explanation written before from one that changed (store/alerts.ts openBatchWriter).
import { describe, expect, it } from 'vitest';
import { valuesDigest } from '../lib/digest.ts';

describe('valuesDigest', () => {
  it('gives one digest to the same values, and another to any list that differs in a value, its kind, or where it ends', () => {
    const lists: Array<Array<string | number | boolean | null>> = [
      [], [null], [''], ['n'], ['\u0000'], ['\u0000n'], [null, null], ['', ''], ['a', 'b'], ['ab'], ['a\u0000sb'], ['a', 'sb'],
      [1], ['1'], [true], ['true'], [false], [0], [-1.5], [1e-7], [0.1 + 0.2], [0.3], [NaN], [Infinity], [-Infinity],
      ['ecm', 'level', null, 0.03, 1.2, 'ratio 3.10 % < 3.00 %'], ['ecm', 'level', null, 0.03, 1.2, 'ratio 3.10 % < 3.00 %', null],
    ];
    const digests = lists.map((l) => valuesDigest(l));
    expect(new Set(digests).size).toBe(lists.length);
    for (const d of digests) expect(d).toMatch(/^[0-9a-f]{16}$/);
    expect(valuesDigest(['ecm', 0.03, null])).toBe(valuesDigest(['ecm', 0.03, null]));
    expect(valuesDigest([null])).toBe(valuesDigest([undefined]));
    // As stored: 0 and -0 are one value, and so is every NaN.
    expect(valuesDigest([-0])).toBe(valuesDigest([0]));
    expect(valuesDigest([Number('x')])).toBe(valuesDigest([NaN]));
  });
});
