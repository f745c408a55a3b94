// Issue #13 over a real store: evaluateAlerts writes every row's explanation into mart_ratios, judges a VAMP group of
// MIDs as one merchant (also when the refresh judges in chunks of one MID), sends one watch notice per month when asked,
// and mart_ratios says whether the VAMP numerator includes TC40s (tc40_observed_from, numerator_complete).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { parseThresholds } from '../rules/thresholds.ts';
import { cleanup, insertChargebacks, insertEvents, insertStats, tc40, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
const now = new Date('2026-06-10T06:00:00Z');
const rules = parseThresholds(JSON.stringify({ groups: { acme: { mids: ['g1', 'g2'] } }, watch: { fraction: 0.8, notify: true } }), 't.json');

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  const mc = (month: string, cb: number) => ({ mid: 'w1', network: 'mastercard' as const, month, cb, tx: 10_000 });
  await insertStats(store, [
    mc('2026-03', 10),
    mc('2026-04', 125), // 1.25 % of March, 125 ≥ 80: in ECM's watch band
    mc('2026-05', 10),
    // h1: ECM, then HECM in May, back to ECM in June (at once)
    { mid: 'h1', network: 'mastercard', month: '2026-03', cb: 10, tx: 10_000 },
    { mid: 'h1', network: 'mastercard', month: '2026-04', cb: 200, tx: 10_000 },
    { mid: 'h1', network: 'mastercard', month: '2026-05', cb: 400, tx: 10_000 },
    { mid: 'h1', network: 'mastercard', month: '2026-06', cb: 200, tx: 10_000 },
    // g1 and g2: 1,000 of 50,000 and 600 of 30,000 Visa disputes in May: each 2 % but under 1,500; together 1,600
    { mid: 'g1', network: 'visa', month: '2026-05', cb: 1_000, tx: 50_000 },
    { mid: 'g2', network: 'visa', month: '2026-05', cb: 600, tx: 30_000 },
  ]);
  await insertChargebacks(store, [
    { mid: 'g1', network: 'visa', received: '2026-05-04', n: 1_000 },
    { mid: 'g2', network: 'visa', received: '2026-05-04', n: 600 },
  ]);
  // The first event the service dated 2026-06-02 (received later, today, by the receiver's clock): May's VAMP
  // numerator lacks TC40s, and coverage follows the service's clock, not the receiver's.
  await insertEvents(store, 'prevention.new', [tc40('g1', 'pre_1', '2026-06-02T00:00:00Z')], { at: '2026-06-02T00:00:00Z' });
});
afterAll(() => cleanup(store, dir));

describe('evaluateAlerts under issue #13 rules', () => {
  it('judges the VAMP group on its sums and names the group in the notice', async () => {
    const r = await evaluateAlerts(store, { asOf: now, rules, now });
    const vamp = r.newNotices.filter((n) => n.program === 'vamp').map((n) => [n.kind, n.mid, n.level, n.month]);
    expect(vamp).toEqual([['reached', 'acme', 'excessive', '2026-05']]);
    const watch = r.newNotices.filter((n) => n.kind === 'watch').map((n) => [n.mid, n.program, n.level, n.month, n.notify]);
    expect(watch).toEqual([['w1', 'ecp', 'ecm', '2026-04', false]]);
    expect(r.newNotices.find((n) => n.kind === 'watch')!.message).toContain('WATCH');
  });

  it('shows the explanation in mart_ratios', async () => {
    // A level stands on TC40s missing (the month before capture began), and says what is missing.
    const TC40_MISSING = 'TC40 reports not captured before 2026-06-02: they arrive as prevention events only (cbp run subscriptions, then cbp run ingest)';
    const rows = await store.all<Record<string, unknown>>(
      `SELECT mid, program, month, level, state, next_level, reason, monitored_as, region, region_source, numerator_complete, tc40_observed_from::VARCHAR AS tc40_from, certainty
         FROM mart_ratios WHERE metric = 'count' AND NOT is_projection AND ((mid IN ('g1', 'g2') AND program = 'vamp') OR (mid = 'w1' AND program = 'ecp' AND month = '2026-04'))
        ORDER BY mid`,
    );
    expect(rows).toEqual([
      { mid: 'g1', program: 'vamp', month: '2026-05', level: 'excessive', state: 'level', next_level: null, reason: TC40_MISSING, monitored_as: 'acme', region: 'US', region_source: 'default', numerator_complete: false, tc40_from: '2026-06-02', certainty: 'approximate' },
      { mid: 'g2', program: 'vamp', month: '2026-05', level: 'excessive', state: 'level', next_level: null, reason: TC40_MISSING, monitored_as: 'acme', region: 'US', region_source: 'default', numerator_complete: false, tc40_from: '2026-06-02', certainty: 'approximate' },
      { mid: 'w1', program: 'ecp', month: '2026-04', level: null, state: 'watch', next_level: 'ecm', reason: 'ratio 1.25 % < 1.50 %', monitored_as: 'w1', region: 'US', region_source: 'default', numerator_complete: true, tc40_from: '2026-06-02', certainty: 'exact' },
    ]);
  });

  it('judges the group whole when the refresh judges one MID a chunk, and shows each member with the group\'s level', async () => {
    const r = await refreshRatios(store, rules, { full: true, judgedRows: 1 });
    expect(r.fromMonth).toBeNull();
    const g = await store.all<Record<string, unknown>>(
      `SELECT mid, monitored_as, level, numerator_complete FROM mart_ratios WHERE program = 'vamp' AND metric = 'count' AND NOT is_projection ORDER BY mid, month`);
    expect(g.map((x) => [x.mid, x.monitored_as, x.level, x.numerator_complete])).toEqual([['g1', 'acme', 'excessive', false], ['g2', 'acme', 'excessive', false]]);
    const mine = await store.all<{ level: string | null }>(
      "SELECT level FROM mart_ratios WHERE mid = 'g2' AND month = '2026-05' AND program = 'vamp' AND metric = 'count' AND NOT is_projection");
    expect(mine.map((x) => x.level)).toEqual(['excessive']);
  });

  it('pages HECM once: escalated in May and left for ECM in June pages June only, and evaluating again adds nothing', async () => {
    const h1 = (await store.all<Record<string, unknown>>("SELECT kind, level, previous_level, month, notify FROM alerts WHERE mid = 'h1' ORDER BY month, kind"));
    expect(h1).toEqual([
      { kind: 'reached', level: 'ecm', previous_level: null, month: '2026-04', notify: false },
      { kind: 'escalated', level: 'hecm', previous_level: 'ecm', month: '2026-05', notify: false },
      { kind: 'resolved', level: 'hecm', previous_level: 'ecm', month: '2026-06', notify: true },
    ]);
    expect((await evaluateAlerts(store, { asOf: now, rules, now })).newNotices).toEqual([]);
    expect((await evaluateAlerts(store, { asOf: now, rules, now, full: true })).newNotices).toEqual([]);
  });
});
