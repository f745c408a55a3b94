// CSV files as users and portals write them: the load reads the header itself (no sniffing), so each dialect
// detail it must get right is pinned here, and a row the CSV reader cannot split against the header goes to
// the quarantine instead of failing the load or being dropped.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { csvHeader, loadReport } from '../store/load.ts';
import { CHARGEBACK_COLUMNS } from '../contract/reporting.ts';
import { toIsoUtc } from '../contract/common.ts';
import { DATA_TABLES, dump, tmpDir, writeCsv, chargeback, type Rec } from './store-fixtures.ts';
import { BadReportFileError } from '../store/errors.ts';

const SEEN = '2024-03-05T00:00:00Z';
const H = CHARGEBACK_COLUMNS.join(',');
const row = (case_number: string) =>
  `${case_number},New,74000000000000000000001,MID-1,411111******1111,visa,94.76,USD,4837,Fraud,2024-03-02 10:15:00,2024-02-20,,,`;

async function load(text: string | Buffer, name = 'cb.csv'): Promise<{ store: Store; r: Awaited<ReturnType<typeof loadReport>> }> {
  const dir = tmpDir();
  const file = path.join(dir, name);
  writeFileSync(file, text);
  const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
  return { store, r };
}

const cases = (s: Store) => s.all<Rec>('SELECT case_number, mid, status, amount, reason, name FROM chargebacks ORDER BY case_number');

describe('csvHeader', () => {
  it('reads plain, quoted, BOM-prefixed and CRLF headers, and gives up on what it cannot be sure of', () => {
    const dir = tmpDir();
    const h = (text: string | Buffer) => {
      const f = path.join(dir, 'h.csv');
      writeFileSync(f, text);
      return csvHeader(f);
    };
    expect(h('a,b,c\n1,2,3\n')).toEqual(['a', 'b', 'c']);
    expect(h('\uFEFFa,b\r\n1,2\r\n')).toEqual(['a', 'b']);
    expect(h('"a","b ""x"", y",c\n')).toEqual(['a', 'b "x", y', 'c']);
    expect(h('"multi\nline",b\n')).toEqual(['multi\nline', 'b']);
    expect(h('a,,c')).toEqual(['a', '', 'c']);
    expect(h('a,"unclosed\n')).toBeUndefined();
    expect(h('a,b"c\n')).toBeUndefined();
    expect(h('"a"x,b\n')).toBeUndefined();
  });
});

describe('loading CSV dialects', () => {
  it('reads the same rows whatever the header spelling, quoting, line endings or column order', async () => {
    const plain = await load(`${H}\n${row('CB-1')}\n${row('CB-2')}\n`);
    const want = await dump(plain.store, undefined, ['landing_file']);
    const variants: Record<string, string> = {
      crlf: `${H}\r\n${row('CB-1')}\r\n${row('CB-2')}\r\n`,
      'no final newline': `${H}\n${row('CB-1')}\n${row('CB-2')}`,
      bom: `\uFEFF${H}\n${row('CB-1')}\n${row('CB-2')}\n`,
      'upper case, padded names': `${H.split(',').map((c) => ` ${c.toUpperCase()} `).join(',')}\n${row('CB-1')}\n${row('CB-2')}\n`,
      'quoted names': `${H.split(',').map((c) => `"${c}"`).join(',')}\n${row('CB-1')}\n${row('CB-2')}\n`,
      'blank lines': `${H}\n${row('CB-1')}\n\n${row('CB-2')}\n\n`,
      'extra column': `${H},portal_note\n${row('CB-1')},x\n${row('CB-2')},y\n`,
      reordered: `${[...CHARGEBACK_COLUMNS].reverse().join(',')}\n${row('CB-1').split(',').reverse().join(',')}\n${row('CB-2').split(',').reverse().join(',')}\n`,
    };
    for (const [name, text] of Object.entries(variants)) {
      const { store, r } = await load(text);
      expect([name, r.rowsRead, r.rowsLoaded, r.quarantined]).toEqual([name, 2, 2, 0]);
      expect(await dump(store, undefined, ['landing_file']), name).toEqual(want);
      store.close();
    }
    plain.store.close();
  });

  it('keeps commas, quotes and line breaks inside quoted values', async () => {
    const { store, r } = await load(`${H}\n"CB-1",New,,MID-1,,visa,10,USD,,"Fraud, ""card"" not\npresent",2024-03-02,,,"Doe, Jane",\n`);
    expect(r).toMatchObject({ rowsRead: 1, rowsLoaded: 1, quarantined: 0 });
    expect(await cases(store)).toEqual([
      { case_number: 'CB-1', mid: 'MID-1', status: 'New', amount: '10.0000', reason: 'Fraud, "card" not\npresent', name: 'Doe, Jane' },
    ]);
    store.close();
  });

  it('reads a file many read buffers long whose quoted values hold line breaks, every row', async () => {
    const lines = Array.from({ length: 200_000 }, (_, i) =>
      i % 7919 === 0 ? `CB-${i},New,7400,MID-1,4111,visa,9.5,USD,4837,"Fraud\nmulti, ""line""\n",2024-03-02 10:15:00,2024-02-20,,,` : row(`CB-${i}`),
    );
    const { store, r } = await load(`${H}\n${lines.join('\n')}\n`);
    expect(r).toMatchObject({ rowsRead: 200_000, rowsLoaded: 200_000, quarantined: 0 });
    expect(await store.all("SELECT count(*) AS n FROM chargebacks WHERE reason = 'Fraud' || chr(10) || 'multi, \"line\"' || chr(10)")).toEqual([{ n: '26' }]);
    store.close();
  });

  it('takes the first of two columns with the same name, and reads a header-only file as no rows', async () => {
    const dup = await load('case_number,mid,status,amount,date_received,mid\nCB-1,MID-1,New,10,2024-03-02,MID-2\n');
    expect(await cases(dup.store)).toEqual([{ case_number: 'CB-1', mid: 'MID-1', status: 'New', amount: '10.0000', reason: null, name: null }]);
    dup.store.close();
    const empty = await load(`${H}\n`);
    expect(empty.r).toMatchObject({ rowsRead: 0, rowsLoaded: 0, quarantined: 0 });
    empty.store.close();
  });

  it('leaves a header it cannot parse for certain to DuckDB\'s sniffer, which reads it as before', async () => {
    const { store, r } = await load('case_number,mid,status,amount,date_received,note"x\nCB-1,MID-1,New,10,2024-03-02,y\n');
    expect(r).toMatchObject({ rowsRead: 1, rowsLoaded: 1 });
    expect((await cases(store)).map((c) => c.case_number)).toEqual(['CB-1']);
    store.close();
  });

  it('refuses a file with another delimiter, naming the columns it found', async () => {
    await expect(load('case_number;mid;status;amount\nCB-1;MID-1;New;10\n')).rejects.toThrow(
      /not a chargebacks CSV report: its header has no case_number column \(columns: case_number;mid;status;amount\)/,
    );
  });
});

describe('date typing in SQL', () => {
  it('agrees with the contract (toIsoUtc) on every spelling, fast path or not; what it refuses is quarantined', async () => {
    const spellings = [
      '2024-03-02 10:15:00', '2024-03-02T10:15:00', '2024-03-02T10:15:00Z', '2024-03-02 10:15:00Z', '2024-03-02',
      '2024-03-02t10:15:00z', ' 2024-03-02 10:15:00 ', '2024-03-02T10:15:00+01:00', '2024-03-02 10:15:00-05:00',
      '2024-03-02T10:15:00.250Z', '2024-03-02T23:30:00-02:00', '2024-02-29', '2024-12-31T23:59:59+00:00',
      '2024-02-30 10:00:00', '2024-02-30', '2024-13-01', 'epoch', 'infinity', '-024-03-02 10:15:00', '2024-03-02 25:00:00',
    ];
    const dir = tmpDir();
    const records = spellings.map((d, i) => chargeback({ case_number: `CB-${i}`, date_received: d }));
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    await loadReport(store, writeCsv(dir, 'dates.csv', 'chargebacks', records), { kind: 'chargebacks', seenAt: SEEN });
    const got = new Map(
      (await store.all<{ case_number: string; d: string }>("SELECT case_number, strftime(date_received, '%Y-%m-%dT%H:%M:%SZ') AS d FROM chargebacks")).map((r) => [r.case_number, r.d]),
    );
    const refused = new Set((await store.all<{ raw: string }>('SELECT raw FROM quarantine')).map((r) => JSON.parse(r.raw).case_number as string));
    spellings.forEach((d, i) => {
      // The SQL reads a lower-case t/z as upper case (docs/spec-decisions.md, leniency of SQL parsing).
      const want = toIsoUtc(d.toUpperCase(), true);
      const key = `CB-${i}`;
      if (want) expect([d, got.get(key)]).toEqual([d, want.replace(/\.\d+Z$/, 'Z')]);
      else expect([d, refused.has(key)]).toEqual([d, true]);
    });
    store.close();
  });
});

describe('rows the CSV reader cannot split', () => {
  it('quarantines a line with more values than the header (once, however many), and loads the rest; refuses bytes that are not UTF-8', async () => {
    const { store, r } = await load(`${H}\n${row('CB-1')},surplus\n${row('CB-2')}\n${row('CB-5')},x,y,z\n${row('CB-4')}\n`);
    expect(r).toMatchObject({ rowsRead: 4, rowsLoaded: 2, quarantined: 2 });
    expect((await cases(store)).map((c) => c.case_number)).toEqual(['CB-2', 'CB-4']);
    const q = await store.all<{ kind: string; raw: string; reason: string }>('SELECT kind, raw, reason FROM quarantine ORDER BY raw');
    expect(q.map((x) => JSON.parse(x.raw).csv_line)).toEqual([`${row('CB-1')},surplus`, `${row('CB-5')},x,y,z`]);
    expect(q.map((x) => x.reason)).toEqual(['row: Expected Number of Columns: 15 Found: 16 (too many columns)', 'row: Expected Number of Columns: 15 Found: 18 (too many columns)']);
    store.close();
    const bad = Buffer.concat([Buffer.from(`${H}\n${row('CB-2')}\nCB-3,New,,MID-1,,visa,10,USD,,Fr`), Buffer.from([0xff, 0xfe]), Buffer.from(`,,,,,\n${row('CB-4')}\n`)]);
    await expect(load(bad)).rejects.toThrow(/is not UTF-8 text \(line 3 holds a byte that is not\)/);
  });

  it('quarantines a row with fewer values than the header', async () => {
    const { store, r } = await load(`${H}\n${row('CB-1')}\nCB-2,Won,,MID-1,,visa,11\n`);
    expect(r).toMatchObject({ rowsRead: 2, rowsLoaded: 1, quarantined: 1 });
    expect(await store.all('SELECT raw, reason FROM quarantine')).toEqual([
      { raw: '{"csv_line":"CB-2,Won,,MID-1,,visa,11"}', reason: 'row: Expected Number of Columns: 15 Found: 7 (missing columns)' },
    ]);
    store.close();
  });

  it('refuses a file with a quote never closed, small or many read buffers long, and stores nothing', async () => {
    const small = `${H}\n${row('CB-1')}\nCB-2,New,,MID-1,,visa,10,USD,,"never closed\n${row('CB-3')}\n`;
    const big = `${H}\n${Array.from({ length: 200_000 }, (_, i) => (i === 100_000 ? 'CB-x,New,,MID-1,,visa,10,USD,,"never closed,,,,,' : row(`CB-${i}`))).join('\n')}\n`;
    for (const [name, text, line] of [['small', small, 3], ['big', big, 100_002]] as const) {
      const dir = tmpDir();
      const file = path.join(dir, 'cb.csv');
      writeFileSync(file, text);
      const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
      const before = await dump(store, [...DATA_TABLES, 'loads']);
      const err = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN }).catch((e: unknown) => e);
      expect(err, name).toBeInstanceOf(BadReportFileError);
      expect((err as Error).message).toContain(`has a quoted value that is never closed, on CSV line ${line}`);
      expect((err as Error).message).toContain('Close the quote');
      expect(await dump(store, [...DATA_TABLES, 'loads']), name).toEqual(before);
      store.close();
    }
  });

  it('treats a header left to the sniffer the same way: surplus values are quarantined, not dropped or loaded', async () => {
    const { store, r } = await load('case_number,mid,status,amount,date_received,note"x\nCB-1,MID-1,New,10,2024-03-02,y,surplus\nCB-2,MID-1,New,10,2024-03-02,y\n');
    expect(r).toMatchObject({ rowsRead: 2, rowsLoaded: 1, quarantined: 1 });
    expect((await cases(store)).map((c) => c.case_number)).toEqual(['CB-2']);
    store.close();
  });

  it('is idempotent: the file again, or an overlapping file with the same bad line elsewhere, adds no second quarantine row', async () => {
    const dir = tmpDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    // A first file makes the store non-empty, so the next loads take the staging path.
    await loadReport(store, writeCsv(dir, 'first.csv', 'chargebacks', [chargeback({ case_number: 'CB-0' })]), { kind: 'chargebacks', seenAt: SEEN });
    const f = path.join(dir, 'bad.csv');
    writeFileSync(f, `${H}\n${row('CB-1')},surplus\n${row('CB-2')}\n`);
    const a = await loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN });
    const b = await loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN });
    const g = path.join(dir, 'overlap.csv');
    writeFileSync(g, `${H}\n${row('CB-2')}\n${row('CB-3')}\n${row('CB-1')},surplus\n`);
    const c = await loadReport(store, g, { kind: 'chargebacks', seenAt: SEEN });
    expect([a.rowsRead, a.rowsLoaded, a.quarantined, b.reloaded, c.quarantined]).toEqual([2, 1, 1, true, 1]);
    expect(await store.all('SELECT count(*) AS n FROM quarantine')).toEqual([{ n: '1' }]);
    expect((await cases(store)).map((x) => x.case_number)).toEqual(['CB-0', 'CB-2', 'CB-3']);
    store.close();
  });
});
