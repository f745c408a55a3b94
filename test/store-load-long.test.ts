// Rows of any length: each one ends up loaded or quarantined with its reason, in CSV and JSON alike, and the
// load's counts add up (rows read = loaded + quarantined). DuckDB's readers alone lost long CSV rows, failed
// on some, read text inside a long quoted value as rows of its own, and refused JSON files with a long record.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { parseCsvRecord, scanCsv } from '../store/long-rows.ts';
import { CHARGEBACK_COLUMNS } from '../contract/reporting.ts';
import { chargeback, midRecord, prevention, tmpDir, writeCsv, writeJson } from './store-fixtures.ts';

const SEEN = '2024-03-05T00:00:00Z';
const MiB = 1024 * 1024;
const H = CHARGEBACK_COLUMNS.join(',');
const row = (case_number: string, reason = 'Fraud') =>
  `${case_number},New,74000000000000000000001,MID-1,411111******1111,visa,94.76,USD,4837,${reason},2024-03-02 10:15:00,2024-02-20,,,`;
const jrec = (case_number: string, reason = 'Fraud') => JSON.stringify(chargeback({ case_number, reason }));
// Every field given: an empty one is read as "" from JSON and as nothing (null) from CSV, so raw rows differ.
const full = (over: Record<string, unknown>) => chargeback({ order_id: 'ORD-1', name: 'Jane Doe', tracking_number: 'TRK-1', ...over });

async function storeIn(dir: string, filled = false): Promise<Store> {
  const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  // A store that already holds a case takes the staging path; an empty one the first-load path.
  if (filled) await loadReport(store, writeCsv(dir, 'first.csv', 'chargebacks', [chargeback({ case_number: 'CB-0' })]), { kind: 'chargebacks', seenAt: SEEN });
  return store;
}

const counts = (s: Store) =>
  s.all<{ cases: string; quarantined: string }>('SELECT (SELECT count(*) FROM chargebacks) AS cases, (SELECT count(*) FROM quarantine) AS quarantined');

describe('a row with a very long value', () => {
  it('loads it up to 16 MiB and quarantines it past that, with the same reason from CSV and JSON (8, 15, 17.5 and 30 MiB)', async () => {
    for (const mb of [8, 15, 17.5, 30]) {
      const big = 'x'.repeat(Math.round(mb * MiB));
      const records = [full({ case_number: 'CB-1' }), full({ case_number: 'CB-2', reason: big }), full({ case_number: 'CB-3' })];
      const got: Record<string, unknown> = {};
      for (const format of ['csv', 'json'] as const) {
        const dir = tmpDir();
        const file = format === 'csv' ? writeCsv(dir, 'cb.csv', 'chargebacks', records) : writeJson(dir, 'cb.json', records);
        const store = await storeIn(dir);
        const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
        const what = `${mb} MiB ${format}`;
        expect([what, r.rowsRead, r.rowsLoaded + r.quarantined], what).toEqual([what, 3, 3]);
        const cases = await store.all<{ case_number: string; n: string }>('SELECT case_number, strlen(reason) AS n FROM chargebacks ORDER BY 1');
        const q = await store.all<{ raw: string; reason: string }>('SELECT raw, reason FROM quarantine');
        const [log] = await store.all<{ rows_read: string; rows_loaded: string; quarantined: string }>('SELECT rows_read, rows_loaded, quarantined FROM loads');
        expect(log, what).toEqual({ rows_read: '3', rows_loaded: String(r.rowsLoaded), quarantined: String(r.quarantined) });
        if (mb <= 16) {
          expect([what, r.rowsLoaded, q]).toEqual([what, 3, []]);
          expect(cases, what).toEqual([
            { case_number: 'CB-1', n: '27' },
            { case_number: 'CB-2', n: String(big.length) },
            { case_number: 'CB-3', n: '27' },
          ]);
        } else {
          expect([what, r.rowsLoaded, r.quarantined]).toEqual([what, 2, 1]);
          expect(cases.map((c) => c.case_number), what).toEqual(['CB-1', 'CB-3']);
          expect(q[0].reason, what).toBe(`row: ${mb.toFixed(1)} MiB, over the 16 MiB limit for one row (its longest value, reason, is ${mb.toFixed(1)} MiB)`);
          const raw = JSON.parse(q[0].raw) as Record<string, string>;
          expect(raw.case_number, what).toBe('CB-2');
          expect(raw.reason, what).toBe(`${'x'.repeat(1000)}…`);
          got[format] = q;
        }
        store.close();
      }
      // The same row, set aside with the same raw text and reason whichever format it came in.
      if (mb > 16) expect(got.csv).toEqual(got.json);
    }
  });

  it('quarantines it the same on a store that already holds data, once across formats, and a reload adds nothing', async () => {
    const dir = tmpDir();
    const store = await storeIn(dir, true);
    const records = [full({ case_number: 'CB-1' }), full({ case_number: 'CB-2', name: 'n'.repeat(17 * MiB) })];
    const csv = await loadReport(store, writeCsv(dir, 'cb.csv', 'chargebacks', records), { kind: 'chargebacks', seenAt: SEEN });
    const json = await loadReport(store, writeJson(dir, 'cb.json', records), { kind: 'chargebacks', seenAt: SEEN });
    const again = await loadReport(store, path.join(dir, 'cb.csv'), { kind: 'chargebacks', seenAt: SEEN });
    for (const r of [csv, json, again]) expect([r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([2, 1, 1]);
    expect(await counts(store)).toEqual([{ cases: '2', quarantined: '1' }]);
    expect((await store.all<{ reason: string }>('SELECT reason FROM quarantine'))[0].reason).toBe(
      'row: 17.0 MiB, over the 16 MiB limit for one row (its longest value, name, is 17.0 MiB)',
    );
    store.close();
  });

  it('counts the whole row: many values that are long together put it over the limit', async () => {
    const dir = tmpDir();
    const store = await storeIn(dir);
    const long = chargeback({ case_number: 'CB-2', reason: 'r'.repeat(9 * MiB), name: 'n'.repeat(8 * MiB) });
    const r = await loadReport(store, writeCsv(dir, 'cb.csv', 'chargebacks', [chargeback(), long]), { kind: 'chargebacks', seenAt: SEEN });
    expect([r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([2, 1, 1]);
    const [q] = await store.all<{ raw: string; reason: string }>('SELECT raw, reason FROM quarantine');
    expect(q.reason).toBe('row: 17.0 MiB, over the 16 MiB limit for one row (its longest value, reason, is 9.0 MiB)');
    expect(JSON.parse(q.raw)).toMatchObject({ case_number: 'CB-2', reason: `${'r'.repeat(1000)}…`, name: `${'n'.repeat(1000)}…`, status: 'New' });
    store.close();
  });
});

describe('a long row of the other report kinds', () => {
  it('is loaded or quarantined by the same rule in prevention and MID reports', async () => {
    const cases = [
      ['prevention', [prevention(), prevention({ alert_case_id: 'pre_2', merchant_descriptor: 'm'.repeat(17 * MiB) }), prevention({ alert_case_id: 'pre_3', name: 'n'.repeat(9 * MiB) })], 'merchant_descriptor'],
      ['mid_report', [midRecord(), midRecord({ mid: 'MID-2', alias: 'a'.repeat(17 * MiB) }), midRecord({ mid: 'MID-3', alias: 'a'.repeat(9 * MiB) })], 'alias'],
    ] as const;
    for (const [kind, records, field] of cases) {
      for (const format of ['csv', 'json'] as const) {
        const dir = tmpDir();
        const file = format === 'csv' ? writeCsv(dir, 'r.csv', kind, [...records]) : writeJson(dir, 'r.json', [...records]);
        const store = await storeIn(dir);
        const r = await loadReport(store, file, { kind, seenAt: SEEN, window: { from: '2024-02-01', to: '2024-02-29' } });
        const what = `${kind} ${format}`;
        expect([what, r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([what, 3, 2, 1]);
        expect(await store.all('SELECT reason FROM quarantine'), what).toEqual([
          { reason: `row: 17.0 MiB, over the 16 MiB limit for one row (its longest value, ${field}, is 17.0 MiB)` },
        ]);
        store.close();
      }
    }
  });
});

describe('a long row in a big CSV file', () => {
  const pre = Array.from({ length: 50_000 }, (_, i) => row(`A-${i}`)).join('\n');
  const post = Array.from({ length: 50_000 }, (_, i) => row(`Z-${i}`)).join('\n');

  it('never reads the lines inside a long quoted value as rows, and loses no row around it', async () => {
    // A 10 MiB quoted value whose lines look like chargebacks: DuckDB's reader read them as rows of their own.
    const lines: string[] = [];
    for (let i = 0, n = 0; n < 10 * MiB; i++) {
      const l = row(`FAKE-${i}`, 'y'.repeat(900));
      lines.push(l);
      n += l.length + 1;
    }
    const value = lines.join('\n');
    const dir = tmpDir();
    const file = path.join(dir, 'cb.csv');
    writeFileSync(file, `${H}\n${pre}\n${row('CB-2', `"${value}"`)}\n${post}\n`);
    const store = await storeIn(dir);
    const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
    expect([r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([100_001, 100_001, 0]);
    expect(await store.all("SELECT count(*) AS n FROM chargebacks WHERE case_number LIKE 'FAKE%'")).toEqual([{ n: '0' }]);
    expect(await store.all("SELECT reason = $1 AS same FROM chargebacks WHERE case_number = 'CB-2'", [value])).toEqual([{ same: true }]);
    store.close();
  });

  it('quarantines a 20 MiB line in the middle (it vanished), with line feeds or carriage returns', async () => {
    for (const nl of ['\n', '\r', '\r\n']) {
      const dir = tmpDir();
      const file = path.join(dir, 'cb.csv');
      writeFileSync(file, [H, pre, row('CB-2', 'x'.repeat(20 * MiB)), post, ''].join('\n').replace(/\n/g, nl));
      const store = await storeIn(dir);
      const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
      const what = JSON.stringify(nl);
      expect([what, r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([what, 100_001, 100_000, 1]);
      expect(await counts(store), what).toEqual([{ cases: '100000', quarantined: '1' }]);
      store.close();
    }
  });

  it('quarantines a long line the reader could not split, as it does a short one; refuses bytes that are not UTF-8, whatever the line', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'cb.csv');
    const long = 'x'.repeat(10 * MiB);
    writeFileSync(file, `${H}\n${pre}\n${row('CB-2', long)},surplus\n${row('CB-3', long)}\n${post}\n`);
    const store = await storeIn(dir);
    const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
    expect([r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([100_002, 100_001, 1]);
    const q = await store.all<{ raw: string; reason: string }>('SELECT raw, reason FROM quarantine ORDER BY reason');
    expect(q.map((x) => x.reason)).toEqual(['row: Expected Number of Columns: 15 Found: 16 (too many columns)']);
    expect(q.map((x) => JSON.parse(x.raw).csv_line)).toEqual([`${row('CB-2', long)}`.slice(0, 1000) + '…']);
    const bad = path.join(dir, 'bad.csv');
    writeFileSync(bad, Buffer.concat([Buffer.from(`${H}\n${pre}\n${row('CB-3', long)}`), Buffer.from([0xff]), Buffer.from(`\n${post}\n`)]));
    await expect(loadReport(store, bad, { kind: 'chargebacks', seenAt: SEEN })).rejects.toThrow(/is not UTF-8 text \(line 50002 holds/);
    store.close();
  });
});

describe('a JSON record DuckDB refuses for its size', () => {
  const pre = Array.from({ length: 50_000 }, (_, i) => jrec(`A-${i}`)).join(',\n');
  const post = Array.from({ length: 50_000 }, (_, i) => jrec(`Z-${i}`)).join(',\n');

  it('is read by cbp instead: a 31 MiB record quarantined, a 10 MiB one beside it loaded, braces and quotes inside text kept', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'cb.json');
    const tricky = `"},{"case_number":"FAKE-1","status":"New","mid":"MID-1","amount":1} \\ ] [ { ${'z'.repeat(10 * MiB)}`;
    writeFileSync(file, `[${pre},\n${jrec('CB-2', 'x'.repeat(31 * MiB))},\n${jrec('CB-3', tricky)},\n${post}]`);
    const store = await storeIn(dir);
    const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
    expect([r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([100_002, 100_001, 1]);
    expect(await store.all("SELECT reason = $1 AS same FROM chargebacks WHERE case_number = 'CB-3'", [tricky])).toEqual([{ same: true }]);
    expect(await store.all("SELECT count(*) AS n FROM chargebacks WHERE case_number LIKE 'FAKE%'")).toEqual([{ n: '0' }]);
    expect(await store.all('SELECT reason FROM quarantine')).toEqual([
      { reason: 'row: 31.0 MiB, over the 16 MiB limit for one row (its longest value, reason, is 31.0 MiB)' },
    ]);
    store.close();
  });

  it('sets a record too big to parse (70 MiB) aside as written, first, last or in the middle', async () => {
    const huge = jrec('CB-2', 'x'.repeat(70 * MiB));
    for (const [where, text] of [
      ['first', `[${huge},\n${post}]`],
      ['middle', `[${pre},\n${huge},\n${post}]`],
      ['last', `[${pre},\n${huge}\n]`],
    ] as const) {
      const dir = tmpDir();
      const file = path.join(dir, 'cb.json');
      writeFileSync(file, text);
      const store = await storeIn(dir);
      const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
      const n = where === 'middle' ? 100_000 : 50_000;
      expect([where, r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([where, n + 1, n, 1]);
      const [q] = await store.all<{ raw: string; reason: string }>('SELECT raw, reason FROM quarantine');
      expect(q.reason).toBe(`row: ${((huge.length) / MiB).toFixed(1)} MiB as written, over the 16 MiB limit for one row`);
      expect(JSON.parse(q.raw).json_record).toBe(`${huge.slice(0, 1000)}…`);
      store.close();
    }
  });
});

describe('cbp reading CSV records itself', () => {
  it('splits records and values exactly as DuckDB\'s reader does', async () => {
    // Every record of this file is "long" at threshold 0, so cbp parses each; DuckDB reads the same file.
    const text = [
      'a,b,c',
      '1,"x, y",3',
      '2,"he said ""hi""",',
      '3,"two\nlines\r\nand crlf",z',
      '4, "one space",z',
      '5,  "two spaces",z',
      '6,x"y"z,',
      '7,"",""',
      '8,"x" ,z',
      '9,é ü 😀,"😀, é"',
      ',,',
    ].join('\n') + '\n';
    const dir = tmpDir();
    const file = path.join(dir, 'x.csv');
    writeFileSync(file, text);
    const scan = await scanCsv(file, 0);
    expect(scan.unclosed).toBeUndefined();
    const ours = [];
    for (const span of scan.long.slice(1)) {
      const r = await parseCsvRecord(file, span, ['a', 'b', 'c']);
      expect(r.ok).toBe(true);
      if (r.ok) ours.push(r.values);
    }
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    const theirs = await store.all(
      `SELECT c0 AS a, c1 AS b, c2 AS c FROM read_csv('${file}', header=true, delim=',', quote='"', escape='"', auto_detect=false, columns={'c0': 'VARCHAR', 'c1': 'VARCHAR', 'c2': 'VARCHAR'})`,
    );
    expect(ours).toEqual(theirs);
    expect(ours).toHaveLength(10);
    store.close();
  });

  it('finds a file that ends inside a quoted value, and where the value opened', async () => {
    const dir = tmpDir();
    const file = path.join(dir, 'x.csv');
    writeFileSync(file, 'a,b\n1,2\n3,"open\n4,5\n');
    expect(await scanCsv(file, 0)).toMatchObject({ unclosed: 8 });
  });

  it('refuses a big file whose quoted value is never closed on the line where it opens, whatever its line breaks', async () => {
    for (const nl of ['\n', '\r\n', '\r']) {
      const dir = tmpDir();
      const file = path.join(dir, 'cb.csv');
      const rows = Array.from({ length: 60_000 }, (_, i) => (i === 30_000 ? 'CB-x,New,,MID-1,,visa,10,USD,,"never closed,,,,,' : row(`CB-${i}`)));
      writeFileSync(file, [H, ...rows, ''].join(nl));
      const store = await storeIn(dir);
      const err = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN }).then(() => undefined, (e: Error) => e);
      expect(err?.message, JSON.stringify(nl)).toContain('has a quoted value that is never closed, on CSV line 30002 ("CB-x,New,,MID-1,,visa,10,USD,,\\"never closed,,,,,');
      expect(await counts(store)).toEqual([{ cases: '0', quarantined: '0' }]);
      store.close();
    }
  });
});
