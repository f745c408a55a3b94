// The production evaluation (the SQL judge, its table and the notices from its months) against the oracle judging every
// row in JavaScript (test/oracle/): on bench-like generated data (bench/ratios-data.ts) and on the engine tests' data,
// the notices, states and every rule-read row of mart_ratios must be the oracle's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { judgeRows } from './oracle/judged.ts';
import { explainRows } from './oracle/explain.ts';
import { addMonths } from '../lib/utc.ts';
import { parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import { computeRatios } from '../store/ratios.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

let db: { store: Store; dir: string };
beforeAll(async () => { db = await tempStore(); });
afterAll(() => cleanup(db?.store, db?.dir));

const rules: RuleSet = parseThresholds(JSON.stringify({ watch: { fraction: 0.75, notify: true }, enable: ['mastercard.ecp.early_warning'] }), 't.json');

async function compare(store: Store, asOf: string): Promise<void> {
  const now = new Date(asOf);
  const r = await evaluateAlerts(store, { asOf, rules, now, full: true });
  const all = await computeRatios(store, { asOf });
  // The reference: every row, one batch, nothing recorded before.
  const ref = judgeRows(all, [], { rules, notifySince: addMonths(asOf.slice(0, 7), -1), now: now.toISOString(), known: new Map() });
  // The judge's notices (the early warnings of the chance of a breach are not the reference's: test/forecast-store.test.ts).
  const notices = await store.all<{ notice_id: string; notify: boolean }>("SELECT notice_id, notify FROM alerts WHERE kind <> 'likely' ORDER BY notice_id");
  expect(notices.map((n) => `${n.notice_id} ${n.notify}`)).toEqual(ref.notices.map((n) => `${n.notice_id} ${n.notify}`).sort());
  expect(r.newNotices.filter((n) => n.kind !== 'likely').length).toBe(ref.notices.length);
  const states = await store.all<Record<string, unknown>>('SELECT mid, network, program, level, month, status FROM alert_states ORDER BY ALL');
  const key = (x: Record<string, unknown>) => [x.mid, x.network, x.program, x.level, x.month, x.status].join('|');
  expect(states.map(key)).toEqual(ref.states.map((s) => key(s as unknown as Record<string, unknown>)).sort());
  // Every rule-read row's level and state as the oracle explains them, as mart_ratios shows them.
  const targets = new Set(rules.rules.filter((x) => x.enabled).map((x) => `${x.network}|${x.program}|${x.metric}`));
  const js = explainRows(all, rules).filter((x) => targets.has(`${x.network}|${x.program}|${x.metric}`));
  const stored = new Map((await store.all<Record<string, unknown>>(
    `SELECT mid, network, program, metric, month, is_projection, level, state, reason, closeness, headroom_count, over_by_count, headroom_basis,
            fee_estimate, fee_currency, fee_basis FROM mart_ratios WHERE month <= $m`,
    { m: asOf.slice(0, 7) }))
    .filter((x) => targets.has(`${x.network}|${x.program}|${x.metric}`))
    .map((x) => [[x.mid, x.network, x.program, x.metric, x.month, x.is_projection].join('|'), x]));
  expect(stored.size).toBe(js.length);
  for (const x of js) {
    const got = stored.get([x.mid, x.network, x.program, x.metric, x.month, x.is_projection].join('|'));
    const fields = ['level', 'state', 'reason', 'closeness', 'headroom_count', 'over_by_count', 'headroom_basis', 'fee_estimate', 'fee_currency', 'fee_basis'] as const;
    expect(Object.fromEntries(fields.map((f) => [f, got?.[f]]))).toEqual(Object.fromEntries(fields.map((f) => [f, x[f]])));
  }
}

describe('evaluateAlerts against the reference', () => {
  it('on bench-like data: 400 MIDs × 30 months', async () => {
    await generateRatioData(db.store, { mids: 400, months: 30 });
    await compare(db.store, '2026-06-20T06:00:00Z');
    const levels = await db.store.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM mart_ratios WHERE state = 'level'");
    expect(levels[0].n).toBeGreaterThan(100);
  }, 120_000);

  it('on the engine tests\' data: a level, escalation, three months to leave, a month to date', async () => {
    const t = await tempStore();
    try {
      const mc = (month: string, cb: number, endDay?: number) => ({ mid: 'm1', network: 'mastercard' as const, month, cb, tx: 10_000, endDay });
      await insertStats(t.store, [
        mc('2025-12', 10), mc('2026-01', 200), mc('2026-02', 350), mc('2026-03', 10), mc('2026-04', 10), mc('2026-05', 10), mc('2026-06', 60, 10),
        { mid: 'ok', network: 'mastercard', month: '2026-05', cb: 1, tx: 10_000 },
        { mid: 'ok', network: 'mastercard', month: '2026-06', cb: 1, tx: 10_000, endDay: 10 },
        { mid: 'a1', network: 'american_express', month: '2026-03', cb: 11, tx: 1_000 },
        { mid: 'a1', network: 'american_express', month: '2026-04', cb: 11, tx: 1_000 },
        { mid: 'a1', network: 'american_express', month: '2026-05', cb: 11, tx: 1_000 },
      ]);
      await compare(t.store, '2026-06-10T06:00:00Z');
    } finally {
      cleanup(t.store, t.dir);
    }
  });
});
