// cbp ratios / cbp alerts as a user runs them: a store on disk, read read-only, JSON out.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cbp as cbpRun } from './activities-fixtures.ts';
import { openTestStore } from './helpers/store-template.ts';
import { cleanup, insertChargebacks, insertStats, tempStore } from './ratios-fixtures.ts';
import { publishSnapshot, snapshotGeneration } from '../store/snapshot.ts';
import { storeVersion } from '../store/generation.ts';

let dir = '';
let base: Record<string, string>;

/** The CLI on the test store (test/activities-fixtures.ts cbp(): no CBP_ settings but these). */
const cbp = (...args: string[]) => cbpRun(args, base);

type Row = Record<string, unknown>;
async function ratios(args: string[], extra: Record<string, string> = {}): Promise<Row[]> {
  const r = await cbpRun(['ratios', ...args, '--json'], { ...base, ...extra });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as Row[];
}
const key = (r: Row) => `${r.mid} ${r.network} ${r.program} ${r.metric} ${r.month}${r.is_projection ? ' proj' : ''}`;

beforeAll(async () => {
  const t = await tempStore();
  dir = t.dir;
  // m1: Mastercard ECM in 2026-01 (400 / 20,000 of 2025-12 = 2 %); m2: no previous month; v1, v2: Visa VAMP
  // below its threshold, v1 with a month to date (14 of 28 days of 2026-02); v2's chargebacks are in EUR.
  await insertStats(t.store, [
    { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 20_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 400, tx: 25_000 },
    { mid: 'm2', network: 'mastercard', month: '2026-01', cb: 400, tx: 25_000 },
    { mid: 'v1', network: 'visa', month: '2026-01', cb: 20, tx: 10_000 },
    { mid: 'v1', network: 'visa', month: '2026-02', cb: 12, tx: 4_000, endDay: 14 },
    { mid: 'v2', network: 'visa', month: '2026-01', cb: 20, tx: 10_000 },
  ]);
  await insertChargebacks(t.store, [
    { mid: 'v1', network: 'visa', received: '2026-01-10', n: 130 },
    { mid: 'v1', network: 'visa', received: '2026-02-10', n: 60 },
    { mid: 'v2', network: 'visa', received: '2026-01-10', n: 30 },
  ]);
  await t.store.run(`UPDATE chargebacks SET currency = 'EUR' WHERE mid = 'v2'`);
  await evaluateAlerts(t.store, { asOf: '2026-02-05T00:00:00Z', rules: loadRules() });
  t.store.close();
  fs.writeFileSync(path.join(dir, 'thresholds.yaml'), 'mids:\n  v1: { region: CEMEA }\n');
  base = { CBP_DB_PATH: t.dbPath, CBP_SNAPSHOT_PATH: path.join(dir, 'none.duckdb'), CBP_LOG_LEVEL: 'silent' };
}, 60_000);
afterAll(() => cleanup(undefined, dir));

describe('cbp ratios', () => {
  it('prints rows with mid, network, program, month, numerator, denominator, denominator_month, unrounded ratio and level', async () => {
    const r = await cbp('ratios', '--month', '2026-01', '--mid', 'm1', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    const ecp = rows.find((x) => x.program === 'ecp' && x.metric === 'count');
    expect(ecp).toMatchObject({ mid: 'm1', network: 'mastercard', month: '2026-01', numerator: 400, denominator: 20_000, denominator_month: '2025-12', ratio: 0.02, level: 'ecm' });
    const m2 = JSON.parse((await cbp('ratios', '--mid', 'm2', '--json')).stdout) as Array<Record<string, unknown>>;
    expect(m2.find((x) => x.program === 'ecp' && x.metric === 'count')).toMatchObject({ ratio: null, no_ratio_reason: 'no_previous_month', level: null });
  });

  it('prints a table for people and rejects a bad month with exit code 2', async () => {
    const t = await cbp('ratios', '--mid', 'm1');
    expect(t.code).toBe(0);
    expect(t.stdout).toContain('ECM');
    const bad = await cbp('ratios', '--month', '2026-13');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--month must be YYYY-MM/);
  });
});

describe('cbp ratios with no flags: what a person asks first', () => {
  it('shows the latest complete month and the month to date, programs in force only, at risk first', async () => {
    const rows = await ratios([]);
    expect([...new Set(rows.map((r) => r.month))]).toEqual(['2026-01', '2026-02']);
    // Programs in force: ECP and EFM counts, VAMP; not monthly, not the retired VDMP / VFMP, not ECP amounts.
    expect([...new Set(rows.map((r) => `${r.network} ${r.program} ${r.metric}`))].sort()).toEqual(['mastercard ecp count', 'mastercard efm count', 'visa vamp count']);
    // Closeness (ratio ÷ the next level's threshold), highest first, within each month; no ratio last.
    const jan = rows.filter((r) => r.month === '2026-01');
    expect(jan.map(key)).toEqual([
      'm1 mastercard ecp count 2026-01', 'v1 visa vamp count 2026-01', 'v2 visa vamp count 2026-01', 'm1 mastercard efm count 2026-01',
      'm2 mastercard ecp count 2026-01', 'm2 mastercard efm count 2026-01',
    ]);
    const close = jan.map((r) => (r.closeness === null ? -1 : (r.closeness as number)));
    expect(close).toEqual([...close].sort((a, b) => b - a));
    expect(jan[0]).toMatchObject({ level: 'ecm', state: 'level', next_level: 'hecm', next_threshold: 0.03, region: 'US', region_source: 'default' });
    expect(jan[0].closeness).toBeCloseTo(0.02 / 0.03, 12);
    // The month to date: the observed row then its projection, each labelled.
    expect(rows.filter((r) => r.month === '2026-02').map((r) => [key(r), r.is_partial])).toEqual([
      ['v1 visa vamp count 2026-02', true], ['v1 visa vamp count 2026-02 proj', true],
    ]);
  });

  it('prints one section per month, month to date labelled, in 120 columns, with the no-region footer', async () => {
    const r = await cbpRun(['ratios'], base);
    expect(r.code, r.stderr).toBe(0);
    const out = r.stdout;
    expect(out).toMatch(/^2026-01, complete month: 6 rows, 1 at a level, 0 watch$/m);
    expect(out).toMatch(/^2026-02, MONTH TO DATE \(14 of 28 days\): figures so far; PROJ rows projected to month end/m);
    expect(out).toMatch(/^state +mid +program +ratio +next at +close +chance +figures +marks +why not the next level$/m);
    expect(out).toMatch(/^ECM +m1 +mc ecp +2\.00% +hecm 3% +0\.67 +- +400 \/ 20,000 +ratio 2\.00 % < 3\.00 %$/m);
    // The ratio clause is left out where other conditions stopped the row too (ratio and threshold are columns).
    // Never "clear" on missing data: TC40s not captured yet, M-1's MID report not loaded; the reason says what is missing first.
    expect(out).toMatch(/^unknown +v1 +visa vamp +1\.30% +excessive 2\.2% +0\.59 +- +130 \/ 10,000 .*TC40 reports not captured before/m);
    expect(out).toMatch(/^unknown +m2 +mc ecp +- +ecm 1\.5% +- +- +400 \/ - +MID report for 2025-12 not loaded/m);
    expect(out).toContain('Region: every MID shown was evaluated as US*.');
    expect(out).toMatch(/ v1 +visa vamp .* <1% .* MTD\b/);
    expect(out).toMatch(/ v1 +visa vamp .* PROJ\b/);
    expect(out).toContain('MTD month to date');
    for (const line of out.split('\n')) expect(line.length, line).toBeLessThanOrEqual(120);
    expect(out.replace(/\n\s+/g, ' ')).toContain(
      '* 4 MIDs have no region of their own and were evaluated as US (the built-in default; set CBP_DEFAULT_REGION, or set mids.<mid>.region in the thresholds file).',
    );
  });

  it('names the region each MID was evaluated under: its own, else CBP_DEFAULT_REGION, and says how many have none', async () => {
    const extra = { CBP_DEFAULT_REGION: 'eu', CBP_THRESHOLDS_FILE: path.join(dir, 'thresholds.yaml') };
    const rows = await ratios(['--month', '2026-01'], extra);
    expect(rows.find((r) => r.mid === 'v1')).toMatchObject({ region: 'CEMEA', region_source: 'mid' });
    expect(rows.find((r) => r.mid === 'v2')).toMatchObject({ region: 'EU', region_source: 'default' });
    const t = await cbpRun(['ratios', '--month', '2026-01'], { ...base, ...extra });
    expect(t.stdout.replace(/\n\s+/g, ' ')).toContain('* 3 MIDs have no region of their own and were evaluated as EU (CBP_DEFAULT_REGION; or set mids.<mid>.region in the thresholds file).');
    expect(t.stdout).toMatch(/ v1 +visa vamp .* CEMEA /);
  });

  it('filters by network, program (retired ones too), metric, month, and leaves out projections on asking', async () => {
    expect(new Set((await ratios(['--network', 'visa'])).map((r) => r.network))).toEqual(new Set(['visa']));
    const vdmp = await ratios(['--program', 'vdmp', '--month', '2026-01']);
    expect(vdmp.map(key)).toEqual(['v1 visa vdmp count 2026-01', 'v2 visa vdmp count 2026-01']);
    const amounts = await ratios(['--metric', 'amount', '--month', '2026-01']);
    expect(amounts.map(key).sort()).toEqual(['m1 mastercard ecp amount 2026-01', 'm2 mastercard ecp amount 2026-01']);
    const all = await ratios(['--all-programs', '--month', '2026-01']);
    expect(new Set(all.map((r) => r.program))).toEqual(new Set(['monthly', 'vamp', 'vdmp', 'vfmp', 'ecp', 'efm']));
    expect(new Set((await ratios(['--all'])).map((r) => r.month))).toEqual(new Set(['2025-12', '2026-01', '2026-02']));
    expect((await ratios(['--month', '2025-12'])).every((r) => r.month === '2025-12')).toBe(true);
    const noProj = await ratios(['--no-projection']);
    expect(noProj.some((r) => r.is_projection)).toBe(false);
    expect(noProj.some((r) => r.is_partial)).toBe(true);
  });

  it("gives amounts with their MID's currency, as its chargebacks name it; unknown when none does", async () => {
    const rows = await ratios(['--all-programs', '--metric', 'amount', '--month', '2026-01']);
    expect(rows.find((r) => r.mid === 'v2' && r.program === 'monthly')).toMatchObject({ currency: 'EUR', currencies: ['EUR'] });
    expect(rows.find((r) => r.mid === 'v1' && r.program === 'monthly')).toMatchObject({ currency: 'USD' });
    expect(rows.find((r) => r.mid === 'm1' && r.program === 'ecp')).toMatchObject({ currency: null, currencies: [] });
    const t = await cbpRun(['ratios', '--all-programs', '--metric', 'amount', '--month', '2026-01'], base);
    expect(t.stdout).toMatch(/ v2 +visa monthly amt .* EUR 200 \/ 100,000$/m);
    expect(t.stdout).toMatch(/ m1 +mc ecp amt .* \? 4,000 \/ 200,000$/m);
    expect(t.stdout.replace(/\n\s+/g, ' ')).toContain("Amounts are in each MID's currency, as its chargebacks name it (the MID report names none); 2 MIDs without one known currency");
  });

  it('judges the table again before it reads when the rules or the data changed since it was written', async () => {
    const regions = (rows: Row[]) => [...new Set(rows.map((r) => r.region))].sort();
    expect(regions(await ratios([]))).toEqual(['US']);
    // Other rules (another default region): the table is judged under them before it is read, and nothing is behind.
    const ca = await cbpRun(['ratios', '--json'], { ...base, CBP_DEFAULT_REGION: 'CA' });
    expect(ca.code, ca.stderr).toBe(0);
    expect(ca.stderr).not.toMatch(/behind/);
    expect(regions(JSON.parse(ca.stdout) as Row[])).toEqual(['CA']);
    expect(regions(await ratios([]))).toEqual(['US']);
    // Data changed (a MID report row of an old month): judged again, the new MID's row is there.
    const s = await openTestStore({ dbPath: base.CBP_DB_PATH });
    try {
      await insertStats(s, [{ mid: 'x9', network: 'mastercard', month: '2025-11', cb: 1, tx: 1_000 }]);
    } finally {
      s.close();
    }
    const after = await cbpRun(['ratios', '--month', '2025-11', '--mid', 'x9', '--json'], base);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stderr).not.toMatch(/behind/);
    expect((JSON.parse(after.stdout) as Row[]).map((r) => `${r.mid} ${r.network} ${r.month}`)).toContain('x9 mastercard 2025-11');
  });

  it('refuses unknown --network, --program, --metric values and --month with --all (exit 2), listing the valid ones', async () => {
    const cases: Array<[string[], string]> = [
      [['--network', 'amex'], '--network: unknown network "amex"; expected one of visa, mastercard, american_express, discover'],
      [['--program', 'vampire'], '--program: unknown program "vampire"; expected one of monthly, vamp, vdmp, vfmp, ecp, efm, discover_excessive, amex_excessive'],
      [['--metric', 'ratio'], '--metric: unknown metric "ratio"; expected one of count, amount'],
      [['--month', '2026-01', '--all'], 'give --month or --all, not both'],
    ];
    for (const [args, msg] of cases) {
      const r = await cbpRun(['ratios', ...args], base);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(msg);
    }
  });

  it('says of a --mid the snapshot does not know what cbp report says (exit 2)', async () => {
    const r = await cbpRun(['ratios', '--mid', '123'], base);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('--mid: no figures or chargebacks for "123" in the snapshot; check the MID (the dim_mids view lists every MID the snapshot knows)');
  });
});

describe('cbp alerts', () => {
  it('lists the alert history as JSON', async () => {
    const r = await cbp('alerts', '--json');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((x) => [x.mid, x.kind, x.level, x.month])).toEqual([['m1', 'reached', 'ecm', '2026-01']]);
  });
});

describe('cbp ratios / alerts: bad arguments', () => {
  it('refuses an unknown --program, a --limit that is not a whole number and an impossible --as-of with exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['ratios', '--program', 'vampire'], /--program: unknown program "vampire"; expected one of .*vamp/],
      [['alerts', '--limit', 'lots'], /--limit must be a whole number/],
      [['alerts', '--limit', '0'], /--limit must be a whole number of at least 1/],
      [['alerts', 'evaluate', '--as-of', '2026-02-30'], /--as-of must be an ISO 8601 date/],
      [['alerts', 'requeue', '--notifier', 'pager'], /--notifier: unknown notifier "pager"; expected one of webhook, slack, email/],
    ];
    for (const [args, msg] of cases) {
      const r = await cbp(...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('alerts requeue says how many given-up deliveries it put back, as text or JSON', async () => {
    const human = await cbp('alerts', 'requeue');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^0 given-up deliveries put back in the queue; send them with cbp alerts deliver/);
    const json = await cbp('alerts', 'requeue', '--notifier', 'webhook', '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ requeued: 0, notifier: 'webhook' });
  });
});

describe('cbp alerts deliver', () => {
  it('evaluates, then sends the pending notice to the configured webhook once', async () => {
    const bodies: string[] = [];
    const srv = http.createServer((req, res) => {
      let b = '';
      req.on('data', (c) => (b += c));
      req.on('end', () => { bodies.push(b); res.end('ok'); });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
    // The server runs in this process: the fixture's CLI runs without blocking the event loop.
    const run = (...args: string[]) => cbpRun(args, { ...base, CBP_ALERT_WEBHOOK_URL: url, CBP_ALERT_WEBHOOK_SECRET: 'cli-secret-123' });
    try {
      const ev = await run('alerts', 'evaluate', '--as-of', '2026-02-05T00:00:00Z', '--json');
      expect(ev.code).toBe(0);
      expect(JSON.parse(ev.stdout)).toMatchObject({ alerts: 0, noticesQueued: 0 });
      const d1 = await run('alerts', 'deliver', '--json');
      expect(JSON.parse(d1.stdout)).toMatchObject({ sent: 1, retrying: 0, failed: 0 });
      const d2 = await run('alerts', 'deliver', '--json');
      expect(JSON.parse(d2.stdout)).toMatchObject({ sent: 0 });
      expect(bodies).toHaveLength(1);
      expect(JSON.parse(bodies[0])).toMatchObject({ mid: 'm1', kind: 'reached', level: 'ecm', month: '2026-01' });
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });
});

describe('cbp ratios beside a snapshot of another store', () => {
  it('publishes this store over it first, and reads this store\'s rows', async () => {
    // Another store's snapshot at the configured path (a store started over, or a path shared by mistake).
    const other = await tempStore();
    const snap = path.join(dir, 'other-published', 'cbp.duckdb');
    try {
      await evaluateAlerts(other.store, { asOf: '2026-02-05T00:00:00Z', rules: loadRules() });
      await publishSnapshot(other.store, { snapshotPath: snap });
    } finally {
      cleanup(other.store, other.dir);
    }
    const r = await cbpRun(['ratios', '--month', '2026-01', '--mid', 'm1', '--json'], { ...base, CBP_SNAPSHOT_PATH: snap });
    expect(r.stderr).toBe('');
    expect((JSON.parse(r.stdout) as Row[]).map(key)).toContain('m1 mastercard ecp count 2026-01');
    const s = await openTestStore({ dbPath: base.CBP_DB_PATH, readOnly: true });
    try {
      expect(await snapshotGeneration(s, snap)).toMatchObject({ exists: true, ...(await storeVersion(s)) });
    } finally {
      s.close();
    }
  }, 60_000);
});

describe('cbp ratios and cbp report on a snapshot an older cbp published', () => {
  it('say so and what to run, and read it once `cbp db snapshot` has published it again', async () => {
    const snap = path.join(dir, 'old-published', 'cbp.duckdb');
    const env = { ...base, CBP_SNAPSHOT_PATH: snap, CBP_DATA_DIR: dir };
    expect((await cbpRun(['db', 'snapshot'], env)).code).toBe(0);
    // What an older cbp published: its schema a migration behind (and without what that migration made).
    const old = await openTestStore({ dbPath: snap, migrate: false });
    await old.run('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)');
    await old.run('DROP TABLE ratio_mart');
    old.close();
    for (const args of [['ratios', '--json'], ['report', '--out', path.join(dir, 'old-report.html')]]) {
      const r = await cbpRun(args, env);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(/published by an older cbp \(its schema is at migration \d+; this cbp reads \d+\): publish it again with `cbp db snapshot`/);
      expect(r.stderr).not.toMatch(/Catalog Error/);
    }
    expect((await cbpRun(['db', 'snapshot'], env)).code).toBe(0);
    const again = await cbpRun(['ratios', '--json'], env);
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as Row[]).length).toBeGreaterThan(0);
  }, 60_000);
});
