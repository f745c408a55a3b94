// Quoted values holding line breaks, of any length, in CSV files of any size: DuckDB's parallel reader starts
// each 8 MiB buffer after the first at a line break, even one inside a quoted value, and read that value's
// lines as rows of their own (chargebacks that are in no report, loaded with exit 0), or refused a valid file
// as "a quoted value that is never closed". cbp reads such a file serially: every row exactly once.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { scanCsv } from '../store/long-rows.ts';
import { CHARGEBACK_COLUMNS } from '../contract/reporting.ts';
import { tmpDir } from './store-fixtures.ts';

const SEEN = '2024-03-05T00:00:00Z';
const MiB = 1024 * 1024;
const H = CHARGEBACK_COLUMNS.join(',');
const row = (case_number: string, reason = 'Fraud') =>
  `${case_number},New,74000000000000000000001,MID-1,411111******1111,visa,94.76,USD,4837,${reason},2024-03-02 10:15:00,2024-02-20,,,`;

/**
 * A NOTE case's reason: a quoted text of `bytes` made of lines that look like chargebacks (QUOTED-…), whose
 * last line stops after the 10th field (or after a comma: then DuckDB's reader saw an unclosed quote).
 */
function note(k: number, bytes: number, comma: boolean): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < bytes; i++) {
    const l = row(`QUOTED-${k}-${i}`);
    lines.push(l);
    n += l.length + 1;
  }
  lines.push(`QUOTED-${k}-last,New,74000000000000000000001,MID-1,411111******1111,visa,94.76,USD,4837,Fraud${comma ? ',' : ''}`);
  return row(`NOTE-${k}`, `"${lines.join('\n')}"`);
}

/** A file of `total` bytes or a little more: plain rows, with a NOTE whose value is centred on each of `at`. */
function writeFile(file: string, total: number, at: number[], value: number, comma = false): { rows: number; notes: number } {
  const parts = [`${H}\n`];
  let size = parts[0].length;
  let rows = 0;
  const plainUntil = (end: number) => {
    while (size < end) {
      const r = `${row(`CB-${rows++}`)}\n`;
      parts.push(r);
      size += r.length;
    }
  };
  at.forEach((centre, k) => {
    plainUntil(centre - value / 2);
    const r = `${note(k, value, comma)}\n`;
    parts.push(r);
    size += r.length;
  });
  plainUntil(total);
  writeFileSync(file, parts.join(''));
  return { rows: rows + at.length, notes: at.length };
}

async function load(file: string, dir: string) {
  const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  try {
    const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
    const [c] = await store.all<{ quoted: string; notes: string; cases: string }>(
      `SELECT count(*) FILTER (WHERE case_number LIKE 'QUOTED%') AS quoted, count(*) FILTER (WHERE case_number LIKE 'NOTE%') AS notes,
              count(*) AS cases FROM chargebacks`,
    );
    return { read: r.rowsRead, loaded: r.rowsLoaded, quarantined: r.quarantined, ...c };
  } finally {
    store.close();
  }
}

describe('a quoted value holding line breaks', () => {
  it('never becomes rows: 100 values of 0.1 MiB, 1,400 rows apart (a 25 MiB file), ending after a value or after a comma', async () => {
    // One value every 0.25 MiB: those at 8, 16 and 24 MiB cross the starts of the reader's buffers.
    const at = Array.from({ length: 100 }, (_, k) => (k + 1) * 0.25 * MiB);
    const got: unknown[] = [];
    const want: unknown[] = [];
    for (const comma of [false, true]) {
      const dir = tmpDir();
      const file = path.join(dir, 'cb.csv');
      const { rows } = writeFile(file, 25.2 * MiB, at, 0.1 * MiB, comma);
      got.push({ comma, ...(await load(file, dir).catch((e: Error) => ({ error: e.message.slice(0, 100) }))) });
      want.push({ comma, read: rows, loaded: rows, quarantined: 0, quoted: '0', notes: '100', cases: String(rows) });
    }
    expect(got).toEqual(want);
  });

  it('is read exactly wherever it lies: one buffer (6 MiB), across the 8 MiB buffer start (9 MiB), across each of 8, 16, 24 MiB (30 MiB)', async () => {
    const cases: [number, number[], boolean][] = [
      [6 * MiB, [2 * MiB, 4 * MiB, 5.9 * MiB], false],
      [9 * MiB, [8 * MiB], false],
      [9 * MiB, [8 * MiB], true],
      [30 * MiB, [8 * MiB, 16 * MiB, 24 * MiB], false],
    ];
    const got: unknown[] = [];
    const want: unknown[] = [];
    for (const [total, at, comma] of cases) {
      const dir = tmpDir();
      const file = path.join(dir, 'cb.csv');
      const { rows, notes } = writeFile(file, total, at, 0.1 * MiB, comma);
      const what = `${total / MiB} MiB${comma ? ', comma' : ''}`;
      got.push({ what, ...(await load(file, dir).catch((e: Error) => ({ error: e.message.slice(0, 100) }))) });
      want.push({ what, read: rows, loaded: rows, quarantined: 0, quoted: '0', notes: String(notes), cases: String(rows) });
    }
    expect(got).toEqual(want);
  });

  it('is found by the record scan (line feed, carriage return, across its read chunks), and a file without one is not flagged', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'cb.csv');
    const plain = Array.from({ length: 20 }, (_, i) => row(`CB-${i}`, '"Fraud, said the customer"')).join('\n');
    const cases: [string, string, boolean][] = [
      ['none', `${H}\n${plain}\n`, false],
      ['LF', `${H}\n${plain}\n${row('X', '"a\nb"')}\n`, true],
      ['CR', `${H}\r${row('X', '"a\rb"')}\r`, true],
      // A value crossing the scan's 8 MiB chunks, its only line break in the second chunk.
      ['chunks', `${H}\n${row('X', `"${'y'.repeat(8 * MiB)}\nz"`)}\n`, true],
      ['text', `${H}\n${row('X', 'a"b')}\n${row('Y')}\n`, false],
    ];
    for (const [what, text, want] of cases) {
      writeFileSync(file, text);
      expect([what, (await scanCsv(file, 4 * MiB)).quotedBreak]).toEqual([what, want]);
    }
  });
});
