// "Did you mean" for a misspelled name, as commander does for subcommands: the known names nearest by
// Damerau-Levenshtein distance (at most 3 edits, and at most 40 % of the name).

/** Edits (insert, delete, substitute, swap two neighbours) from a to b. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The known names nearest to name (case-insensitive), or none when every one is too far. */
export function nearestNames(name: string, known: Iterable<string>): string[] {
  let best = Infinity;
  let out: string[] = [];
  for (const k of known) {
    const dist = editDistance(name.toUpperCase(), k.toUpperCase());
    if (dist > 3 || dist > 0.4 * Math.max(name.length, k.length)) continue;
    if (dist < best) { best = dist; out = [k]; } else if (dist === best) out.push(k);
  }
  return out;
}

/** " (did you mean X?)" for the nearest names, or the fallback when there is none. */
export function didYouMean(name: string, known: Iterable<string>, fallback = ''): string {
  const near = nearestNames(name, known);
  return near.length ? ` (did you mean ${near.join(' or ')}?)` : fallback;
}
