// A newcomer's first day with their own files (issue #37): what must not load as whole (a JSON report cut short, a
// CSV without a column every row needs, a file not UTF-8, a MID report window that is not one month), what is
// quarantined (chargebacks without their date, amounts no case holds), loads in the order they came, what `cbp load`
// says of them (exit 1 when no row loaded, MIDs no MID report names), and `cbp alerts` and `cbp ratios` with the
// levels first.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { checkUtf8 } from '../store/load/file-checks.ts';
import { importReport } from '../store/landing.ts';
import { BadReportFileError } from '../store/errors.ts';
import { UsageError } from '../lib/errors.ts';
import { chargeback, midRecord, tmpDir, writeCsv, writeJson } from './store-fixtures.ts';
import { runCbp } from './helpers/cbp-cli.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { shownRatios } from '../store/ratios-stream.ts';

let dir: string;
let store: Store;
beforeAll(async () => {
  dir = tmpDir();
  store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
});
afterAll(() => store.close());

const count = async (table: string) => Number((await store.all<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`))[0].n);
const three = [chargeback(), chargeback({ case_number: 'CB-2' }), chargeback({ case_number: 'CB-3' })];

describe('a load refuses', () => {
  it('a JSON report that ends before its array closes, wherever the cut', async () => {
    const whole = JSON.stringify(three, null, 1);
    const cuts = [whole.slice(0, whole.lastIndexOf('}') + 1) + ',', whole.slice(0, whole.lastIndexOf('}') + 1), whole.slice(0, whole.length - 40)];
    for (const [i, text] of cuts.entries()) {
      const f = path.join(dir, `cut-${i}.json`);
      fs.writeFileSync(f, text);
      const e = await loadReport(store, f, { kind: 'chargebacks' }).catch((x: unknown) => x);
      expect(e, text.slice(-30)).toBeInstanceOf(BadReportFileError);
      expect((e as Error).message).toMatch(/ends before its JSON array closes.*cut short.*nothing was loaded/);
    }
    expect(await count('chargebacks')).toBe(0);
    expect(await count('quarantine')).toBe(0);
    // The whole file, with a trailing line break, loads.
    await expect(loadReport(store, writeJson(dir, 'whole.json', three), { kind: 'chargebacks' })).resolves.toMatchObject({ rowsLoaded: 3 });
  });

  it('a CSV without a column every row needs, naming it, before any row', async () => {
    const f = writeCsv(dir, 'no-amount.csv', 'chargebacks', three);
    const lines = fs.readFileSync(f, 'utf8').split('\n');
    const at = lines[0].split(',').indexOf('amount');
    fs.writeFileSync(f, lines.map((l) => l.split(',').filter((_, k) => k !== at).join(',')).join('\n'));
    const e = await loadReport(store, f, { kind: 'chargebacks' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BadReportFileError);
    expect((e as Error).message).toContain('lacks a column every chargebacks row needs: amount');
    expect(await count('quarantine')).toBe(0);
  });

  it('a file that is not UTF-8, naming the line', async () => {
    const f = writeCsv(dir, 'cp1252.csv', 'chargebacks', [chargeback(), chargeback({ case_number: 'CB-2', name: 'Ren\u00e9e' })]);
    // Windows-1252: é is the one byte 0xE9.
    fs.writeFileSync(f, Buffer.from(fs.readFileSync(f, 'utf8'), 'latin1'));
    const before = await count('chargebacks');
    const e = await loadReport(store, f, { kind: 'chargebacks' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BadReportFileError);
    expect((e as Error).message).toMatch(/is not UTF-8 text \(line 3 holds a byte that is not\)/);
    expect(await count('chargebacks')).toBe(before);
  });

  it('takes UTF-8 whose characters straddle its read buffers', async () => {
    const f = path.join(dir, 'long.txt');
    // 4-byte characters at every offset around the read buffer's end.
    fs.writeFileSync(f, 'a'.repeat((1 << 20) - 5) + '\u{1F600}'.repeat(4) + 'é'.repeat(1 << 19));
    await expect(checkUtf8(f, f)).resolves.toBeUndefined();
    fs.appendFileSync(f, Buffer.from([0x0a, 0xc3, 0x28]));
    await expect(checkUtf8(f, f)).rejects.toThrow(/line 2 holds/);
  });

  it('a MID report window that is not one calendar month from its first day', async () => {
    const f = writeJson(dir, 'mid.json', [midRecord()]);
    for (const window of [{ from: '2026-09-15', to: '2026-10-14' }, { from: '2026-09-01', to: '2026-10-31' }, { from: '2026-09-02', to: '2026-09-30' }]) {
      const e = await loadReport(store, f, { kind: 'mid_report', window }).catch((x: unknown) => x);
      expect(e, window.from).toBeInstanceOf(UsageError);
      expect((e as Error).message).toContain('one calendar month from its first day');
    }
    expect(await count('mid_stats')).toBe(0);
    await expect(loadReport(store, f, { kind: 'mid_report', window: { from: '2026-09-01', to: '2026-09-12' } })).resolves.toMatchObject({ rowsLoaded: 1 });
  });
});

describe('a load quarantines', () => {
  it('a chargeback without its date_received (it would count in no month), saying why', async () => {
    const f = writeJson(dir, 'undated.json', [chargeback({ case_number: 'U-1', date_received: '' }), chargeback({ case_number: 'U-2' })]);
    await expect(loadReport(store, f, { kind: 'chargebacks' })).resolves.toMatchObject({ rowsLoaded: 1, quarantined: 1 });
    const [q] = await store.all<{ reason: string }>("SELECT reason FROM quarantine WHERE raw LIKE '%U-1%'");
    expect(q.reason).toMatch(/^date_received: a UTC date-time .*, got /);
  });
});

describe('a load quarantines amounts no case holds', () => {
  it('negative, a trillion or more, or too large to read, each saying which', async () => {
    const f = writeJson(dir, 'amounts.json', [
      chargeback({ case_number: 'A-1', amount: -5 }), chargeback({ case_number: 'A-2', amount: 12e12 }),
      chargeback({ case_number: 'A-3', amount: '99999999999999999999' }), chargeback({ case_number: 'A-4', amount: 'ten' }),
      chargeback({ case_number: 'A-5', amount: 999_999_999_999.99 }),
    ]);
    await expect(loadReport(store, f, { kind: 'chargebacks' })).resolves.toMatchObject({ rowsLoaded: 1, quarantined: 4 });
    const q = await store.all<{ raw: string; reason: string }>("SELECT raw, reason FROM quarantine WHERE raw LIKE '%\"A-%' ORDER BY raw");
    expect(q.map((x) => [JSON.parse(x.raw).case_number, x.reason.replace(/, got .*/, '')])).toEqual([
      ['A-1', 'amount: an amount of 0 or more'],
      ['A-2', 'amount: an amount below 1,000,000,000,000 (no case holds more)'],
      ['A-3', 'amount: an amount below 1,000,000,000,000 (no case holds more)'],
      ['A-4', 'amount: an amount (a number or a decimal string such as "94.76")'],
    ]);
  });
});

describe('two files loaded within one second', () => {
  it('are observations in the order they came: the history tells which status came last', async () => {
    const data = tmpDir();
    const at = (ms: number) => () => new Date(Date.UTC(2024, 2, 9, 10, 0, 0, ms));
    const a = await importReport(data, 'chargebacks', writeJson(data, 'a.json', [chargeback({ case_number: 'S-1', status: 'New' })]), { format: 'json', now: at(100) });
    const b = await importReport(data, 'chargebacks', writeJson(data, 'b.json', [chargeback({ case_number: 'S-1', status: 'Won' })]), { format: 'json', now: at(900) });
    await loadReport(store, b.path, { kind: 'chargebacks' });
    await loadReport(store, a.path, { kind: 'chargebacks' });
    const h = await store.all<{ status: string; seen_at: string }>("SELECT status, strftime(seen_at, '%H:%M:%S.%g') AS seen_at FROM chargeback_status_history WHERE case_number = 'S-1' ORDER BY seen_at");
    expect(h).toEqual([{ status: 'New', seen_at: '10:00:00.100' }, { status: 'Won', seen_at: '10:00:00.900' }]);
    expect(await store.all("SELECT status FROM chargebacks WHERE case_number = 'S-1'")).toEqual([{ status: 'Won' }]);
  });
});

describe('cbp load', () => {
  it('says how many cases were received outside the --from/--to given, and loads them by their own dates', async () => {
    const cwd = tmpDir();
    const env = { CBP_DATA_DIR: path.join(cwd, 'data'), CBP_LOG_LEVEL: 'silent' };
    const f = writeJson(cwd, 'march.json', [chargeback({ case_number: 'W-1', date_received: '2024-02-27' }), chargeback({ case_number: 'W-2' }), chargeback({ case_number: 'W-3', date_received: '2024-04-02' })]);
    const r = await runCbp(['load', 'chargebacks', f, '--from', '2024-03-01', '--to', '2024-03-31'], { cwd, env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('3 rows read, 3 loaded');
    expect(r.stderr).toContain('cbp: 2 cases were received outside 2024-03-01..2024-03-31 (the first: W-1 (2024-02-27)): loaded by their own dates; check --from/--to');
  });

  it('warns of MIDs no MID report names, with their count', async () => {
    const cwd = tmpDir();
    const env = { CBP_DATA_DIR: path.join(cwd, 'data'), CBP_LOG_LEVEL: 'silent' };
    const first = await runCbp(['load', 'chargebacks', writeJson(cwd, 'a.json', three)], { cwd, env });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('1 MID of this file (MID-1): no MID report is loaded yet, so no ratio counts these cases');
    const mid = await runCbp(['load', 'mid_report', writeJson(cwd, 'm.json', [midRecord()]), '--from', '2024-03-01', '--to', '2024-03-31'], { cwd, env });
    expect(mid.code, mid.stderr).toBe(0);
    const typo = [chargeback({ case_number: 'T-1', mid: 'not-a-mid' }), chargeback({ case_number: 'T-2', mid: 'MID-9' }), chargeback({ case_number: 'T-3' })];
    const second = await runCbp(['load', 'chargebacks', writeJson(cwd, 'b.json', typo)], { cwd, env });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('2 MIDs of this file (MID-9, …) are in no MID report loaded');
  });


  it('exits 1 when no row of the file could be loaded, and says where the rows are', async () => {
    const cwd = tmpDir();
    const f = writeJson(cwd, 'all-bad.json', [chargeback({ amount: 'lots' }), chargeback({ case_number: 'CB-2', amount: 'more' })]);
    const r = await runCbp(['load', 'chargebacks', f], { cwd, env: { CBP_DATA_DIR: path.join(cwd, 'data'), CBP_LOG_LEVEL: 'silent' } });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain('2 rows read, 0 loaded, 2 quarantined');
    expect(r.stderr).toContain('no row could be loaded: all 2 were quarantined, the first because amount: an amount');
    expect(r.stderr).toContain('SELECT reason, raw FROM quarantine');
    const ok = await runCbp(['load', 'chargebacks', writeJson(cwd, 'good.json', three)], { cwd, env: { CBP_DATA_DIR: path.join(cwd, 'data'), CBP_LOG_LEVEL: 'silent' } });
    expect(ok.code, ok.stderr).toBe(0);
  });
});

describe('cbp alerts', () => {
  it('lists the levels\' notices first, takes --kind, and refuses an unknown kind (exit 2)', async () => {
    const cwd = tmpDir();
    const data = path.join(cwd, 'data');
    const s = await openTestStore({ dbPath: path.join(data, 'cbp.duckdb') });
    const notice = (id: string, kind: string, at: string) =>
      s.run(`INSERT INTO alerts (notice_id, kind, mid, network, program, level, month, is_projection, is_partial, notify, message, created_at)
             VALUES ($1, $2, 'M', 'visa', 'vamp', 'excessive', '2026-01', FALSE, FALSE, FALSE, $1, $3::TIMESTAMP)`, [id, kind, at]);
    await notice('level-old', 'reached', '2026-01-02 00:00:00');
    for (let i = 0; i < 3; i++) await notice(`due-${i}`, 'due', `2026-01-1${i} 00:00:00`);
    s.close();
    const env = { CBP_DATA_DIR: data, CBP_LOG_LEVEL: 'silent' };
    const all = await runCbp(['alerts', '--json', '--limit', '2'], { cwd, env });
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout).map((n: { notice_id: string }) => n.notice_id)).toEqual(['level-old', 'due-2']);
    const due = await runCbp(['alerts', '--json', '--kind', 'due'], { cwd, env });
    expect(JSON.parse(due.stdout).map((n: { notice_id: string }) => n.notice_id)).toEqual(['due-2', 'due-1', 'due-0']);
    const bad = await runCbp(['alerts', '--kind', 'reached,levels'], { cwd, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--kind: unknown kind "levels"; expected one or more of reached, escalated');
  });
});

describe('cbp ratios', () => {
  it('lists the series at a level first, as the report does, then by closeness', async () => {
    const t = await tempStore();
    try {
      const months = ['2026-03', '2026-04'];
      // "calm" runs at 5 % of 1,000 transactions, under ECM's 100 minimum: clear, closeness over 3. "hot" is at ECM.
      await insertStats(t.store, months.flatMap((month) => [
        { mid: 'calm', month, network: 'mastercard' as const, cb: 50, tx: 1_000, prevTx: 1_000 },
        { mid: 'hot', month, network: 'mastercard' as const, cb: 200, tx: 10_000, prevTx: 10_000 },
      ]));
      const asOf = new Date('2026-05-02T06:00:00Z');
      await evaluateAlerts(t.store, { asOf, rules: loadRules(), now: asOf });
      const shown = await shownRatios(t.store, { scope: 'month', month: '2026-04' }, 0);
      const ecp = (shown.rows as Array<{ mid: string; program: string; state: string; closeness: number }>).filter((r) => r.program === 'ecp');
      expect(ecp.map((r) => [r.mid, r.state])).toEqual([['hot', 'level'], ['calm', 'clear']]);
      expect(ecp[1].closeness).toBeGreaterThan(ecp[0].closeness);
    } finally {
      cleanup(t.store, t.dir);
    }
  });
});
