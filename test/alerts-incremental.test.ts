// The nightly's incremental evaluation against a full one: two stores get the same loads month by month, ten months
// across a year end (month-to-date windows, then the closed month, a re-fetch revising an old month, a gap, TC40
// events, RDR), one judged from the months that changed (default), the other every month (full: true): notices,
// states and mart_ratios must be identical, and the kept table what the oracle (test/oracle/explain.ts) says of every
// rule-read row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { parseThresholds } from '../rules/thresholds.ts';
import { explainRows } from './oracle/explain.ts';
import { computeRatios } from '../store/ratios.ts';
import { cleanup, insertChargebacks, insertEvents, insertStats, keptInputsDrift, tc40, tempStore, type StatFixture } from './ratios-fixtures.ts';

const rules = parseThresholds(JSON.stringify({ watch: { fraction: 0.8, notify: true }, groups: { grp: { mids: ['v2', 'v3'] } } }), 't.json');
let a: { store: Store; dir: string };
let b: { store: Store; dir: string };
beforeAll(async () => { a = await tempStore(); b = await tempStore(); });
afterAll(() => { cleanup(a?.store, a?.dir); cleanup(b?.store, b?.dir); });

/** A deterministic pseudo-random stream. */
function rng(seed: number): () => number {
  let x = seed;
  return () => { x = (x * 1103515245 + 12345) % 2147483648; return x / 2147483648; };
}

const months: string[] = [];
for (let y = 2025, m = 6; months.length < 10; m++) { if (m > 12) { y++; m = 1; } months.push(`${y}-${String(m).padStart(2, '0')}`); }

function statsFor(month: string, r: () => number, endDay?: number): StatFixture[] {
  const out: StatFixture[] = [];
  for (const mid of ['m1', 'm2', 'm3']) {
    const hot = r() < 0.5;
    out.push({ mid, network: 'mastercard', month, cb: Math.round((hot ? 120 + r() * 300 : r() * 60) * (endDay ? 0.4 : 1)), tx: 10_000, endDay });
    out.push({ mid, network: 'american_express', month, cb: Math.round(hot ? 8 + r() * 8 : r() * 8), tx: 1_000, endDay });
    out.push({ mid, network: 'discover', month, cb: Math.round(hot ? 90 + r() * 40 : r() * 50), tx: 9_000, endDay });
  }
  for (const mid of ['v1', 'v2', 'v3']) out.push({ mid, network: 'visa', month, cb: 0, tx: 40_000 + Math.round(r() * 5_000), endDay });
  return out;
}

async function both(fn: (s: Store) => Promise<void>): Promise<void> {
  await fn(a.store);
  await fn(b.store);
}

async function snapshot(s: Store) {
  const notices = await s.all('SELECT notice_id, kind, mid, program, level, month, notify FROM alerts ORDER BY notice_id');
  const states = await s.all('SELECT mid, network, program, level, month, status, rank, ratio FROM alert_states ORDER BY ALL');
  // What analysts see: every row of the kept table with its explanation.
  const expl = await s.all(`SELECT mid, network, program, metric, month, is_projection, level, state, next_level, next_threshold, closeness, reason,
      region, region_source, monitored_as, superseded_by, certainty, certainty_note
    FROM mart_ratios WHERE monitored_as IS NOT NULL ORDER BY mid, network, program, metric, month, is_projection`);
  return { notices, states, expl };
}

describe('incremental evaluation', () => {
  it('says exactly what a full evaluation says, load after load', async () => {
    const r = rng(7);
    let incremental = 0;
    for (let i = 0; i < months.length; i++) {
      const month = months[i];
      const seed = Math.floor(r() * 1e9);
      // Month to date on the 12th, then the closed month at the next step (the window replaces nothing: the longest wins).
      await both((s) => insertStats(s, statsFor(month, rng(seed), 12)));
      await both((s) => insertStats(s, statsFor(month, rng(seed))));
      const vr = rng(seed + 1);
      const disputes = [Math.round(vr() * 900), Math.round(vr() * 900), Math.round(vr() * 900)];
      const fraud = Math.round(vr() * 80);
      await both((s) => insertChargebacks(s, [
        { mid: 'v1', network: 'visa', received: `${month}-05`, n: disputes[0] },
        { mid: 'v2', network: 'visa', received: `${month}-05`, n: disputes[1] },
        { mid: 'v3', network: 'visa', received: `${month}-05`, n: disputes[2] },
        { mid: 'm1', network: 'mastercard', received: `${month}-06`, n: fraud, reasonCode: '4837', amount: 1_000 },
      ]));
      if (i === 4) await both((s) => insertEvents(s, 'prevention.new', [tc40('v1', `pre_${i}`, `${month}-03T10:00:00Z`)]));
      if (i === 7) {
        // A re-fetch revises an old month: m1's Mastercard figures of the third month.
        await both(async (s) => { await s.run(`UPDATE mid_stats SET chargeback_count = 900 WHERE mid = 'm1' AND network = 'mastercard' AND window_start = DATE '${months[2]}-01'`); });
      }
      if (i === 8) {
        // A whole month of m2 removed (its figures withdrawn).
        await both(async (s) => { await s.run(`DELETE FROM mid_stats WHERE mid = 'm2' AND window_start = DATE '${months[6]}-01'`); });
      }
      const asOf = new Date(`${month}-20T06:00:00Z`);
      // a judged from the months that changed, b every month.
      const ra = await evaluateAlerts(a.store, { asOf, rules, now: asOf });
      await evaluateAlerts(b.store, { asOf, rules, now: asOf, full: true });
      if (ra.fromMonth !== null) incremental++;
      // The ratio inputs the evaluation kept (computed again only where a load touched them) are the sources' own.
      expect(await keptInputsDrift(a.store), `kept ratio inputs after ${month}`).toBe(0);
      expect(await snapshot(a.store), `after ${month}`).toEqual(await snapshot(b.store));
    }
    // Every evaluation after the first but one: the load that brings the first events judges every month (each row
    // says from which day TC40s were captured).
    expect(incremental).toBe(months.length - 2);
    // Something happened at all: levels, watch notices, a group.
    const kinds = (await a.store.all<{ kind: string }>('SELECT DISTINCT kind FROM alerts ORDER BY kind')).map((x) => x.kind);
    expect(kinds).toEqual(expect.arrayContaining(['reached', 'resolved', 'watch']));
  }, 240_000);

  it('explains every row the rules read exactly as the oracle does, after the last incremental evaluation', async () => {
    const asOf = `${months[months.length - 1]}-20T06:00:00Z`;
    const targets = new Set(rules.rules.filter((x) => x.enabled).map((x) => `${x.network}|${x.program}|${x.metric}`));
    const js = explainRows(await computeRatios(a.store, { asOf }), rules).filter((r) => targets.has(`${r.network}|${r.program}|${r.metric}`));
    const key = (r: object) => { const x = r as Record<string, unknown>; return [x.mid, x.network, x.program, x.metric, x.month, x.is_projection].join('|'); };
    const stored = new Map((await a.store.all<Record<string, unknown>>(
      'SELECT * EXCLUDE (explained_at) FROM mart_ratios WHERE month <= $m', { m: asOf.slice(0, 7) }))
      .filter((r) => targets.has(`${r.network}|${r.program}|${r.metric}`)).map((r) => [key(r), r]));
    expect(stored.size).toBe(js.length);
    const fields = ['level', 'state', 'next_level', 'next_threshold', 'closeness', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by', 'certainty', 'certainty_note'] as const;
    let clear = 0;
    for (const r of js) {
      const got = stored.get(key(r));
      expect(got, key(r)).toBeDefined();
      expect(Object.fromEntries(fields.map((f) => [f, got![f]])), key(r)).toEqual(Object.fromEntries(fields.map((f) => [f, r[f]])));
      if (r.state === 'clear') clear++;
    }
    expect(clear).toBeGreaterThan(20);
    expect(js.some((r) => r.reason?.includes(' minimum'))).toBe(true);
  });
});
