import { spawn } from 'node:child_process';
import { readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport, type LoadResult } from '../store/load.ts';
import { recordReportFetch } from '../store/windows.ts';
import { fetchReport, metaPath, readMeta, type DownloadArgs } from '../store/landing.ts';
import { BadReportFileError } from '../store/errors.ts';
import { UsageError } from '../lib/errors.ts';
import { ROOT, chargeback, dump, midRecord, prevention, tmpDir, writeCsv, writeJson, type Rec } from './store-fixtures.ts';

async function fresh(dir = tmpDir()): Promise<{ dir: string; store: Store }> {
  return { dir, store: await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') }) };
}

const SEEN = '2024-03-05T00:00:00Z';

describe('loading each report kind from JSON and CSV', () => {
  it('lands the same chargeback records identically from JSON and from CSV', async () => {
    const records = [
      chargeback(),
      chargeback({ case_number: 'CB-2', status: 'Did Not Fight', card_type: 'Master Card', amount: '12.50', date_received: '2024-03-02T10:15:00+01:00' }),
      chargeback({ case_number: 'CB-3', status: 'pre-arbitration', card_type: 'AMEX', arn: '', date_received: '2024-03-04', order_id: 'ORD-3', name: 'Jane' }),
    ];
    const a = await fresh();
    const b = await fresh();
    const rj = await loadReport(a.store, writeJson(a.dir, 'cb.json', records), { kind: 'chargebacks', seenAt: SEEN });
    const rc = await loadReport(b.store, writeCsv(b.dir, 'cb.csv', 'chargebacks', records), { kind: 'chargebacks', seenAt: SEEN });
    expect([rj.rowsLoaded, rc.rowsLoaded, rj.quarantined, rc.quarantined]).toEqual([3, 3, 0, 0]);
    expect(await dump(a.store, undefined, ['landing_file'])).toEqual(await dump(b.store, undefined, ['landing_file']));
    const rows = await a.store.all<Rec>('SELECT case_number, status, card_type, amount, date_received, arn FROM chargebacks ORDER BY case_number');
    expect(rows).toEqual([
      { case_number: 'CB-1', status: 'New', card_type: 'mastercard', amount: '94.7600', date_received: '2024-03-02 10:15:00', arn: '74000000000000000000001' },
      { case_number: 'CB-2', status: 'Did Not Fight', card_type: 'mastercard', amount: '12.5000', date_received: '2024-03-02 09:15:00', arn: '74000000000000000000001' },
      { case_number: 'CB-3', status: 'Pre-Arbitration', card_type: 'american_express', amount: '94.7600', date_received: '2024-03-04 00:00:00', arn: null },
    ]);
    a.store.close();
    b.store.close();
  });

  it('lands the same prevention alerts identically from JSON and from CSV, with the last status as current', async () => {
    const records = [prevention(), prevention({ alert_case_id: 'pre_2', statuses: ['New'], source_partner: 'verifi', mid: '', order_id: '', name: '' })];
    const a = await fresh();
    const b = await fresh();
    await loadReport(a.store, writeJson(a.dir, 'pv.json', records), { kind: 'prevention', seenAt: SEEN });
    await loadReport(b.store, writeCsv(b.dir, 'pv.csv', 'prevention', records), { kind: 'prevention', seenAt: SEEN });
    expect(await dump(a.store, undefined, ['landing_file'])).toEqual(await dump(b.store, undefined, ['landing_file']));
    expect(await a.store.all('SELECT alert_case_id, status, statuses, source_partner, mid FROM prevention_alerts ORDER BY 1')).toEqual([
      { alert_case_id: 'pre_2', status: 'New', statuses: ['New'], source_partner: 'Verifi', mid: null },
      { alert_case_id: 'pre_540385dce935441baca73ae04d319c35', status: 'Pending', statuses: ['New', 'Pending'], source_partner: 'Ethoca', mid: 'MID-1' },
    ]);
    a.store.close();
    b.store.close();
  });

  it('turns MID records into one mid_stats row per mid x window x network, from JSON spellings and CSV columns alike', async () => {
    const w = { from: '2024-02-01', to: '2024-02-29' };
    const spelledApart = midRecord({ mid: 'MID-2', master_card: undefined, mastercard: midRecord().master_card, amex: undefined, american_express: midRecord().visa });
    const a = await fresh();
    const b = await fresh();
    await loadReport(a.store, writeJson(a.dir, 'mid.json', [midRecord(), spelledApart]), { kind: 'mid_report', window: w, seenAt: SEEN });
    const csvRecords = [midRecord(), { ...midRecord({ mid: 'MID-2' }), amex: midRecord().visa }];
    await loadReport(b.store, writeCsv(b.dir, 'mid.csv', 'mid_report', csvRecords), { kind: 'mid_report', window: w, seenAt: SEEN });
    expect(await dump(a.store, undefined, ['landing_file'])).toEqual(await dump(b.store, undefined, ['landing_file']));
    const rows = await a.store.all<Rec>("SELECT * EXCLUDE (landing_file, seen_at) FROM mid_stats WHERE mid = 'MID-1' ORDER BY network");
    expect(rows.map((r) => r.network)).toEqual(['all', 'discover', 'mastercard', 'visa']); // no amex object: no row
    expect(rows.find((r) => r.network === 'mastercard')).toMatchObject({
      window_start: '2024-02-01', window_end: '2024-02-29', chargeback_count: '1', transaction_count: '50',
      previous_month_transaction_count: '45', previous_month_transaction_amount: '900.0000',
    });
    expect(rows.find((r) => r.network === 'discover')).toMatchObject({ chargeback_count: '0', chargeback_ratio: null });
    expect(rows.find((r) => r.network === 'all')).toMatchObject({ chargeback_count: '4', transaction_amount: '4000.0000', chargeback_ratio: 0.02 });
    expect(await a.store.all("SELECT network FROM mid_stats WHERE mid = 'MID-2' AND network = 'american_express'")).toHaveLength(1);
    expect(await a.store.all("SELECT alias, gateways FROM mids WHERE mid = 'MID-1'")).toEqual([{ alias: 'Example shop', gateways: ['gw-1', 'gw-2'] }]);
    a.store.close();
    b.store.close();
  });

  it('requires a window for a MID report, whose records carry no dates', async () => {
    const { dir, store } = await fresh();
    await expect(loadReport(store, writeJson(dir, 'mid.json', [midRecord()]), { kind: 'mid_report' })).rejects.toBeInstanceOf(UsageError);
    store.close();
  });
});

describe('status history', () => {
  it('adds a row when a status changes between loads and nothing when it does not', async () => {
    const { dir, store } = await fresh();
    await loadReport(store, writeJson(dir, 'day1.json', [chargeback(), chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    await loadReport(store, writeJson(dir, 'day2.json', [chargeback({ status: 'Won' }), chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-06T00:00:00Z' });
    expect(await store.all('SELECT case_number, status, seen_at FROM chargeback_status_history ORDER BY case_number, seen_at')).toEqual([
      { case_number: 'CB-1', status: 'New', seen_at: '2024-03-05 00:00:00' },
      { case_number: 'CB-1', status: 'Won', seen_at: '2024-03-06 00:00:00' },
      { case_number: 'CB-2', status: 'New', seen_at: '2024-03-05 00:00:00' },
    ]);
    expect(await store.all("SELECT status, first_seen_at, last_seen_at FROM chargebacks WHERE case_number = 'CB-1'")).toEqual([
      { status: 'Won', first_seen_at: '2024-03-05 00:00:00', last_seen_at: '2024-03-06 00:00:00' },
    ]);
    expect(await store.all("SELECT from_status, to_status FROM fct_chargeback_status_changes WHERE case_number = 'CB-1' ORDER BY seen_at")).toEqual([
      { from_status: null, to_status: 'New' },
      { from_status: 'New', to_status: 'Won' },
    ]);
    store.close();
  });

  it('merges an older observation loaded late into the history in time order, and never lets it overwrite newer state', async () => {
    const { dir, store } = await fresh();
    await loadReport(store, writeJson(dir, 'd3.json', [chargeback({ status: 'Won' })]), { kind: 'chargebacks', seenAt: '2024-03-10T00:00:00Z' });
    await loadReport(store, writeJson(dir, 'd1.json', [chargeback({ status: 'New' })]), { kind: 'chargebacks', seenAt: '2024-03-01T00:00:00Z' });
    await loadReport(store, writeJson(dir, 'd2.json', [chargeback({ status: 'Won' })]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    expect(await store.all('SELECT status, seen_at FROM chargeback_status_history ORDER BY seen_at')).toEqual([
      { status: 'New', seen_at: '2024-03-01 00:00:00' },
      { status: 'Won', seen_at: '2024-03-05 00:00:00' },
    ]);
    expect(await store.all('SELECT status, first_seen_at, last_seen_at FROM chargebacks')).toEqual([
      { status: 'Won', first_seen_at: '2024-03-01 00:00:00', last_seen_at: '2024-03-10 00:00:00' },
    ]);
    store.close();
  });

  it('keeps the history of prevention statuses', async () => {
    const { dir, store } = await fresh();
    await loadReport(store, writeJson(dir, 'p1.json', [prevention({ statuses: ['New'] })]), { kind: 'prevention', seenAt: '2024-03-05T00:00:00Z' });
    await loadReport(store, writeJson(dir, 'p2.json', [prevention({ statuses: ['New', 'Complete'] })]), { kind: 'prevention', seenAt: '2024-03-06T00:00:00Z' });
    await loadReport(store, writeJson(dir, 'p3.json', [prevention({ statuses: ['New', 'Complete'] })]), { kind: 'prevention', seenAt: '2024-03-07T00:00:00Z' });
    expect(await store.all('SELECT status, seen_at FROM prevention_status_history ORDER BY seen_at')).toEqual([
      { status: 'New', seen_at: '2024-03-05 00:00:00' },
      { status: 'Complete', seen_at: '2024-03-06 00:00:00' },
    ]);
    store.close();
  });
});

describe('reloading', () => {
  it('leaves the store exactly as one load would when the same file is loaded twice', async () => {
    const { dir, store } = await fresh();
    const f = writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2', amount: 'bad' })]);
    const first = await loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN });
    const once = await dump(store);
    const again = await loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN });
    expect(await dump(store)).toEqual(once);
    expect([first.reloaded, again.reloaded]).toEqual([false, true]);
    expect(await store.all('SELECT load_count FROM loads')).toEqual([{ load_count: 2 }]);
    store.close();
  });

  it('answers a repeat of the same landing file and observation from its log, without reading the file again', async () => {
    const { dir, store } = await fresh();
    const f = writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2', amount: 'bad' })]);
    const bytes = readFileSync(f);
    writeFileSync(metaPath(f), JSON.stringify({
      kind: 'chargebacks', start: null, end: null, mids: null, format: 'json', bytes: bytes.length,
      fetched_at: SEEN, sha256: createHash('sha256').update(bytes).digest('hex'),
    }));
    let commits = 0;
    const opts = { kind: 'chargebacks' as const, beforeCommit: () => void commits++ };
    const first = await loadReport(store, f, opts);
    const once = await dump(store);
    const again = await loadReport(store, f, opts); // a retried activity: same file, same fetched_at
    expect(commits).toBe(1);
    expect(again).toEqual({ ...first, reloaded: true });
    expect(await dump(store)).toEqual(once);
    expect(await store.all('SELECT load_count FROM loads')).toEqual([{ load_count: 2 }]);
    // Observed at another time, the same bytes are a new observation: the full load runs.
    // The log knows these bytes already (read once, by the repeat check): reloaded, and its row counts the load.
    expect(await loadReport(store, f, { ...opts, seenAt: '2024-03-06T00:00:00Z' })).toMatchObject({ reloaded: true, rowsRead: 2 });
    expect(commits).toBe(2);
    expect(await store.all('SELECT load_count FROM loads')).toEqual([{ load_count: 3 }]);
    expect(await store.all('SELECT DISTINCT last_seen_at FROM chargebacks')).toEqual([{ last_seen_at: '2024-03-06 00:00:00' }]);
    // The file rewritten in place after its sidecar (same size): the sidecar's digest no longer holds, so it is read.
    writeFileSync(f, bytes.toString('utf8').replace('94.76', '99.76'));
    utimesSync(f, new Date(Date.now() + 5000), new Date(Date.now() + 5000));
    const edited = await loadReport(store, f, { ...opts, seenAt: '2024-03-06T00:00:00Z' });
    expect(commits).toBe(3);
    expect(edited.sha256).not.toBe(first.sha256);
    expect(await store.all("SELECT amount FROM chargebacks WHERE case_number = 'CB-1'")).toEqual([{ amount: '99.7600' }]);
    store.close();
  });

  it('leaves the store as one load of each window would when overlapping windows are loaded again and again', async () => {
    const w1 = [chargeback({ case_number: 'CB-1' }), chargeback({ case_number: 'CB-2' })];
    const w2 = [chargeback({ case_number: 'CB-2' }), chargeback({ case_number: 'CB-3' })];
    const mid1 = [midRecord()];
    const a = await fresh();
    const fa = writeJson(a.dir, 'w1.json', w1);
    const fb = writeJson(a.dir, 'w2.json', w2);
    const fm = writeJson(a.dir, 'm.json', mid1);
    await loadReport(a.store, fa, { kind: 'chargebacks', window: { from: '2024-03-01', to: '2024-03-10' }, seenAt: SEEN });
    await loadReport(a.store, fb, { kind: 'chargebacks', window: { from: '2024-03-05', to: '2024-03-15' }, seenAt: SEEN });
    await loadReport(a.store, fm, { kind: 'mid_report', window: { from: '2024-03-01', to: '2024-03-31' }, seenAt: SEEN });
    const once = await dump(a.store);
    for (let i = 0; i < 2; i++) {
      await loadReport(a.store, fb, { kind: 'chargebacks', window: { from: '2024-03-05', to: '2024-03-15' }, seenAt: SEEN });
      await loadReport(a.store, fa, { kind: 'chargebacks', window: { from: '2024-03-01', to: '2024-03-10' }, seenAt: SEEN });
      await loadReport(a.store, fm, { kind: 'mid_report', window: { from: '2024-03-01', to: '2024-03-31' }, seenAt: SEEN });
    }
    expect(await dump(a.store)).toEqual(once);
    expect(await a.store.all('SELECT count(*) AS n FROM chargebacks')).toEqual([{ n: '3' }]);
    a.store.close();
  });

  it('keeps one row per key when a file repeats a case', async () => {
    const { dir, store } = await fresh();
    const r = await loadReport(store, writeJson(dir, 'dup.json', [chargeback(), chargeback(), chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: SEEN });
    expect(r).toMatchObject({ rowsRead: 3, rowsLoaded: 2 });
    expect(await store.all('SELECT count(*) AS n FROM chargebacks')).toEqual([{ n: '2' }]);
    expect(await store.all('SELECT count(*) AS n FROM chargeback_status_history')).toEqual([{ n: '2' }]);
    store.close();
  });
});

describe('duplicate keys inside one file', () => {
  it('keeps the same one of two rows of a case on either load path, and a reload changes nothing', async () => {
    const rows = [chargeback({ status: 'New', card_type: 'visa' }), chargeback({ status: 'Did Not Fight', card_type: 'amex' })];
    const a = await fresh();
    const file = writeJson(a.dir, 'dup.json', rows);
    await loadReport(a.store, file, { kind: 'chargebacks', seenAt: SEEN }); // empty store: the first-load path
    const once = await dump(a.store);
    expect(await loadReport(a.store, file, { kind: 'chargebacks', seenAt: SEEN })).toMatchObject({ reloaded: true });
    expect(await dump(a.store)).toEqual(once);
    const b = await fresh();
    await loadReport(b.store, writeJson(b.dir, 'other.json', [chargeback({ case_number: 'CB-0' })]), { kind: 'chargebacks', seenAt: SEEN });
    await loadReport(b.store, writeJson(b.dir, 'dup.json', rows), { kind: 'chargebacks', seenAt: SEEN }); // the staging path
    const kept = "SELECT status, card_type FROM chargebacks WHERE case_number = 'CB-1'";
    expect(await b.store.all(kept)).toEqual(await a.store.all(kept));
    a.store.close();
    b.store.close();
  });
});

describe('quarantine', () => {
  it('quarantines bad rows with a reason naming the field and value, and loads the good ones', async () => {
    const { dir, store } = await fresh();
    const records = [
      chargeback({ case_number: 'OK-1' }),
      chargeback({ case_number: 'BAD-AMOUNT', amount: '12,50' }),
      chargeback({ case_number: 'BAD-STATUS', status: 'Escalated' }),
      chargeback({ case_number: '' }),
      chargeback({ case_number: 'BAD-DATE', date_received: '2024-02-30 10:00:00' }),
      chargeback({ case_number: 'BAD-BRAND', card_type: 'bitcoin' }),
      chargeback({ case_number: 'OK-2', date_received: '2024-03-02' }),
    ];
    for (const [name, file] of [['json', writeJson(dir, 'q.json', records)], ['csv', writeCsv(dir, 'q.csv', 'chargebacks', records)]] as const) {
      const s = name === 'json' ? store : (await fresh()).store;
      const r = await loadReport(s, file, { kind: 'chargebacks', seenAt: SEEN });
      expect(r).toMatchObject({ rowsRead: 7, rowsLoaded: 2, quarantined: 5 });
      expect(await s.all('SELECT case_number FROM chargebacks ORDER BY 1')).toEqual([{ case_number: 'OK-1' }, { case_number: 'OK-2' }]);
      const q = await s.all<{ reason: string; raw: string; landing_file: string }>('SELECT reason, raw, landing_file FROM quarantine ORDER BY reason');
      const reasons = q.map((x) => x.reason).join('\n');
      expect(reasons).toContain('amount: an amount (a number or a decimal string such as "94.76"), got "12,50"');
      expect(reasons).toContain('status: one of Lost, New, Pending, Won, Did Not Fight, Pre-Arbitration, Result Unobtainable, got "Escalated"');
      expect(reasons).toMatch(/case_number: a non-empty value, got (""|nothing)/);
      expect(reasons).toContain('date_received: a UTC date-time YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD HH:MM:SS, or a date YYYY-MM-DD, got "2024-02-30 10:00:00"');
      expect(reasons).toContain('card_type: a card brand');
      expect(JSON.parse(q.find((x) => x.reason.startsWith('amount'))!.raw)).toMatchObject({ case_number: 'BAD-AMOUNT', amount: '12,50' });
      expect(q.every((x) => x.landing_file === file)).toBe(true);
      if (s !== store) s.close();
    }
    store.close();
  });

  it('quarantines a prevention alert with an unknown status and a MID record with a bad count', async () => {
    const { dir, store } = await fresh();
    await loadReport(store, writeJson(dir, 'p.json', [prevention(), prevention({ alert_case_id: 'pre_x', statuses: ['New', 'Closed'] })]), { kind: 'prevention', seenAt: SEEN });
    await loadReport(store, writeJson(dir, 'm.json', [midRecord(), midRecord({ mid: 'MID-2', visa: { ...midRecord().visa as Rec, chargeback_count: 'many' } })]), {
      kind: 'mid_report', window: { from: '2024-02-01', to: '2024-02-29' }, seenAt: SEEN,
    });
    const q = await store.all<{ kind: string; reason: string }>('SELECT kind, reason FROM quarantine ORDER BY kind');
    expect(q).toEqual([
      { kind: 'mid_report', reason: 'visa.chargeback_count: a whole count (0, 1, 2, ...), got "many"' },
      { kind: 'prevention', reason: 'statuses: a list of New, Pending, Complete, got "[\\"New\\",\\"Closed\\"]"' },
    ]);
    expect(await store.all("SELECT count(*) AS n FROM mid_stats WHERE mid = 'MID-2'")).toEqual([{ n: '0' }]);
    store.close();
  });
});

describe('bad files', () => {
  it('refuses a file that is not JSON, not CSV, or another kind of report, and stores nothing', async () => {
    const { dir, store } = await fresh();
    const before = await dump(store, [...(await import('./store-fixtures.ts')).DATA_TABLES, 'loads']);
    const notJson = path.join(dir, 'x.json');
    writeFileSync(notJson, 'case_number,status\nCB-1,New\n');
    await expect(loadReport(store, notJson, { kind: 'chargebacks' })).rejects.toThrow(/not a JSON report/);
    const objects = path.join(dir, 'o.json');
    writeFileSync(objects, '{"case_number": "CB-1"}');
    await expect(loadReport(store, objects, { kind: 'chargebacks' })).rejects.toBeInstanceOf(BadReportFileError);
    await expect(loadReport(store, writeJson(dir, 'pv.json', [prevention()]), { kind: 'chargebacks' })).rejects.toThrow(/not a chargebacks report/);
    await expect(loadReport(store, writeCsv(dir, 'cb.csv', 'chargebacks', [chargeback()]), { kind: 'prevention' })).rejects.toThrow(/not a prevention CSV report/);
    const binary = path.join(dir, 'b.csv');
    writeFileSync(binary, Buffer.from([0, 159, 146, 150, 0, 1, 2]));
    await expect(loadReport(store, binary, { kind: 'chargebacks' })).rejects.toBeInstanceOf(BadReportFileError);
    expect(await dump(store, [...(await import('./store-fixtures.ts')).DATA_TABLES, 'loads'])).toEqual(before);
    store.close();
  });

  it('records an empty report (the service\'s empty 200) as a load of no rows', async () => {
    const { dir, store } = await fresh();
    const f = path.join(dir, 'empty.json');
    writeFileSync(f, '');
    const r = await loadReport(store, f, { kind: 'chargebacks', window: { from: '2024-03-01', to: '2024-03-01' } });
    expect(r).toMatchObject({ rowsRead: 0, rowsLoaded: 0, seenAt: '2024-03-01T23:59:59Z' });
    expect(await loadReport(store, writeJson(dir, 'none.json', []), { kind: 'chargebacks', seenAt: SEEN })).toMatchObject({ rowsRead: 0 });
    store.close();
  });
});

describe('interrupted loads', () => {
  it('leaves the store as before when a load fails inside its transaction, and the next load completes it', async () => {
    const { dir, store } = await fresh();
    await loadReport(store, writeJson(dir, 'a.json', [chargeback()]), { kind: 'chargebacks', seenAt: '2024-03-01T00:00:00Z' });
    const before = await dump(store, [...(await import('./store-fixtures.ts')).DATA_TABLES, 'loads']);
    const f = writeJson(dir, 'b.json', [chargeback({ status: 'Won' }), chargeback({ case_number: 'CB-2', amount: 'x' })]);
    await expect(
      loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN, beforeCommit: () => { throw new Error('injected failure'); } }),
    ).rejects.toThrow('injected failure');
    expect(await dump(store, [...(await import('./store-fixtures.ts')).DATA_TABLES, 'loads'])).toEqual(before);
    await loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN });
    expect(await store.all('SELECT status FROM chargebacks')).toEqual([{ status: 'Won' }]);
    store.close();
  });

  it("commits what the caller records of a load (a window's fetch) with the load, or neither; a repeat records it too", async () => {
    const { dir, store } = await fresh();
    const tables = [...(await import('./store-fixtures.ts')).DATA_TABLES, 'loads', 'report_fetches'];
    const before = await dump(store, tables);
    const f = writeJson(dir, 'w.json', [chargeback()]);
    const window = { from: '2024-03-01', to: '2024-03-07' };
    const record = (fail: boolean) => async (s: Store, r: LoadResult) => {
      await recordReportFetch(s, { kind: 'chargebacks', window, serviceTime: SEEN, fetchedAt: SEEN, records: r.rowsLoaded, quarantined: r.quarantined });
      if (fail) throw new Error('injected failure');
    };
    await expect(loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN, record: record(true) })).rejects.toThrow('injected failure');
    expect(await dump(store, tables)).toEqual(before);
    await loadReport(store, f, { kind: 'chargebacks', seenAt: SEEN, record: record(false) });
    expect(await store.all('SELECT records::INTEGER AS records FROM report_fetches')).toEqual([{ records: 1 }]);
    await store.run('DELETE FROM report_fetches');
    // A sidecar names the file's digest: the same load again only touches the log, and still records the fetch.
    const bytes = readFileSync(f);
    writeFileSync(metaPath(f), JSON.stringify({ kind: 'chargebacks', start: null, end: null, mids: null, format: 'json', bytes: bytes.length, fetched_at: SEEN, sha256: createHash('sha256').update(bytes).digest('hex') }));
    expect(await loadReport(store, f, { kind: 'chargebacks', record: record(false) })).toMatchObject({ reloaded: true });
    expect(await store.all('SELECT records::INTEGER AS records FROM report_fetches')).toEqual([{ records: 1 }]);
    store.close();
  });

  it('leaves the store as before when the loading process is killed mid-load, and the next load completes it', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    let store = await openTestStore({ dbPath });
    await loadReport(store, writeJson(dir, 'a.json', [chargeback()]), { kind: 'chargebacks', seenAt: '2024-03-01T00:00:00Z' });
    const tables = [...(await import('./store-fixtures.ts')).DATA_TABLES, 'loads'];
    const before = await dump(store, tables);
    store.close();
    const records = Array.from({ length: 5000 }, (_, i) => chargeback({ case_number: `K-${i}`, status: i % 2 ? 'Won' : 'Lost' }));
    const f = writeJson(dir, 'big.json', records);
    const script = path.join(dir, 'child.mts');
    writeFileSync(
      script,
      `import { openStore } from ${JSON.stringify(path.join(ROOT, 'store/db.ts'))};
import { loadReport } from ${JSON.stringify(path.join(ROOT, 'store/load.ts'))};
const store = await openStore({ dbPath: ${JSON.stringify(dbPath)} });
await loadReport(store, ${JSON.stringify(f)}, { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z', beforeCommit: async () => {
  process.stdout.write('IN_TRANSACTION\\n');
  await new Promise((r) => setTimeout(r, 60000));
} });
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        if (String(d).includes('IN_TRANSACTION')) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', (code, sig) => (sig === 'SIGKILL' ? resolve() : reject(new Error(`child ended before the kill: ${code} ${stderr}`))));
    });
    await new Promise((r) => child.once('close', r));
    store = await openTestStore({ dbPath });
    expect(await dump(store, tables)).toEqual(before);
    const r = await loadReport(store, f, { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    expect(r.rowsLoaded).toBe(5000);
    expect(await store.all('SELECT count(*) AS n FROM chargebacks')).toEqual([{ n: '5001' }]);
    store.close();
  });
});

describe('landing', () => {
  it('fetches a window into landing/<kind>/<start>_<end>_<mids-hash> with a sidecar, and loads it as observed at fetched_at', async () => {
    const { dir, store } = await fresh();
    const calls: DownloadArgs[] = [];
    const client = {
      async fetchReport(args: DownloadArgs) {
        calls.push(args);
        writeFileSync(args.dest, JSON.stringify([chargeback()]));
        return { path: args.dest, bytes: 10, fetchedAt: '2024-03-08T06:00:00Z', empty: false, status: 200 };
      },
    };
    const { path: p, meta } = await fetchReport({ client, dataDir: path.join(dir, 'data') }, 'chargebacks', { start: '2024-03-01', end: '2024-03-07', mids: ['MID-2', 'MID-1'] });
    expect(path.relative(dir, p)).toMatch(/^data\/landing\/chargebacks\/2024-03-01_2024-03-07_[0-9a-f]{12}\.json$/);
    expect(calls[0]).toMatchObject({ kind: 'chargebacks', start: '2024-03-01T00:00:00Z', end: '2024-03-07T23:59:59Z', format: 'JSON' });
    expect(meta).toMatchObject({ kind: 'chargebacks', start: '2024-03-01', end: '2024-03-07', mids: ['MID-2', 'MID-1'], format: 'json', fetched_at: '2024-03-08T06:00:00Z' });
    expect(meta.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readMeta(p)).toEqual(meta);
    const r = await loadReport(store, p, { kind: 'chargebacks' });
    expect(r).toMatchObject({ seenAt: '2024-03-08T06:00:00Z', window: { from: '2024-03-01', to: '2024-03-07' }, sha256: meta.sha256 });
    expect(await store.all('SELECT window_start, window_end, seen_at FROM loads')).toEqual([
      { window_start: '2024-03-01', window_end: '2024-03-07', seen_at: '2024-03-08 06:00:00' },
    ]);
    store.close();
  });
});
