// The alert state machine's pure part (alerts/notices.ts), without a store: ratio rows judged by the oracle's rules
// (test/oracle/judged.ts) and what earlier evaluations recorded in; notices, their delivery flags and the states to record out.
import { describe, expect, it } from 'vitest';
import { stateRows } from '../alerts/notices.ts';
import { noticeId } from '../alerts/notice-text.ts';
import { seriesIndex } from '../alerts/judged-month.ts';
import { deliveryState } from '../alerts/outbox.ts';
import { evaluateRows, type RatioRow } from './oracle/evaluate.ts';
import { evaluateProjections } from './oracle/projection.ts';
import { judgeRows, oracleMonths } from './oracle/judged.ts';
import { parseThresholds } from '../rules/thresholds.ts';
import type { AlertStateRow, Delivery, RecordedState } from '../store/alerts.ts';
import { explainEach } from './oracle/explain.ts';

const rule = (id: string, level: string, rank: number, ratio: number, extra: Record<string, unknown> = {}) => ({
  id, network: 'mastercard', program: 'ecp', level, rank, metric: 'count', comparison: '>=', ratio_threshold: ratio, ...extra,
});
const rules = parseThresholds(JSON.stringify({
  extends_defaults: false,
  rules: [rule('low', 'low', 1, 0.01), rule('high', 'high', 2, 0.02), rule('off', 'watch', 0, 0.005, { enabled: false })],
  mids: { m2: { rules: [rule('m2.tight', 'tight', 0, 0.008)] } },
}));
const now = '2026-04-02T06:00:00.000Z';

function row(mid: string, month: string, ratio: number): RatioRow {
  return {
    mid, network: 'mastercard', program: 'ecp', metric: 'count', month,
    numerator: ratio * 10_000, denominator: 10_000, denominator_month: month,
    numerator_count: ratio * 10_000, numerator_amount: null, denominator_count: 10_000, denominator_amount: null,
    ratio, ratio_pct: ratio * 100, ratio_bps: ratio * 10_000, no_ratio_reason: null,
    month_transaction_count: 10_000, month_transaction_amount: null,
    is_projection: false, is_partial: false, days_covered: null, days_in_month: null,
    tc40_observed_from: null, numerator_complete: true, missing_sources: null, numerator_floor: false,
  };
}
const series = [row('m1', '2026-01', 0.005), row('m1', '2026-02', 0.012), row('m1', '2026-03', 0.025)];
const id = (kind: 'reached' | 'escalated' | 'resolved', level: string, month: string) => noticeId(kind, 'm1', 'mastercard', 'ecp', level, month);

describe('alert notices, judged without a store', () => {
  it('gives each transition a notice, pages only the months from notifySince, and records a state per level reached', () => {
    const j = judgeRows(series, [], { rules, notifySince: '2026-03', now, known: new Map() });
    expect(j.notices.map((n) => [n.kind, n.level, n.previous_level, n.month, n.notify])).toEqual([
      ['reached', 'low', null, '2026-02', false],
      ['escalated', 'high', 'low', '2026-03', true],
    ]);
    expect(j.fresh).toEqual(j.notices);
    expect(j.promoted).toEqual([]);
    expect(j.notices[1].message).toBe('m1 mastercard ecp: escalated from low to high in 2026-03: 2.500 % (250 / 10000), threshold >= 2.000 %');
    expect(j.states.map((s) => [s.level, s.month, s.status, s.rank, s.ratio, s.seen])).toEqual([
      ['low', '2026-02', 'reached', 1, 0.012, now],
      ['high', '2026-03', 'reached', 2, 0.025, now],
    ]);
    expect([j.levelsReached, j.projectedLevels]).toEqual([2, 0]);
  });

  it('says nothing already recorded again, and promotes once a notice recorded as history that is now to be paged', () => {
    const known = new Map([[id('reached', 'low', '2026-02'), false], [id('escalated', 'high', '2026-03'), false]]);
    const j = judgeRows(series, [], { rules, notifySince: '2026-03', now, known });
    expect(j.fresh).toEqual([]);
    expect(j.promoted.map((n) => n.notice_id)).toEqual([id('escalated', 'high', '2026-03')]);
    const paged = new Map([...known, [id('escalated', 'high', '2026-03'), true]]);
    expect(judgeRows(series, [], { rules, notifySince: '2026-03', now, known: paged }).promoted).toEqual([]);
  });


  it('says once that a month holding a level cannot be judged, with what to load; no resolved notice, and none for a series far from any level', () => {
    const missing = 'chargeback report not loaded for 2026-04-30: cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30 (or cbp load chargebacks FILE --from 2026-04-01 --to 2026-04-30)';
    // The MID report alone reads 0.1 % for April: the level is held, not left.
    const held = [...series, { ...row('m1', '2026-04', 0.001), missing_sources: missing }];
    const j = judgeRows(held, [], { rules, notifySince: '2026-04', now, known: new Map() });
    expect(j.notices.filter((n) => n.month === '2026-04').map((n) => [n.kind, n.level, n.previous_level, n.notify])).toEqual([['unknown', 'high', 'high', true]]);
    const [u] = j.notices.filter((n) => n.kind === 'unknown');
    expect(u.message).toBe(`m1 mastercard ecp: UNKNOWN — 2026-04 cannot be judged, level high is held until it can: 0.100 % (10 / 10000), threshold >= 2.000 %; ${missing}`);
    expect(u.notice_id).toBe(noticeId('unknown', 'm1', 'mastercard', 'ecp', 'high', '2026-04'));
    // Judged again: nothing new.
    expect(judgeRows(held, [], { rules, notifySince: '2026-04', now, known: new Map(j.notices.map((n) => [n.notice_id, n.notify])) }).fresh).toEqual([]);
    // A month to date says nothing of it: it holds its level anyway.
    const mtd = [...series, { ...row('m1', '2026-04', 0.001), missing_sources: missing, is_partial: true }];
    expect(judgeRows(mtd, [], { rules, notifySince: '2026-04', now, known: new Map() }).notices.filter((n) => n.kind === 'unknown')).toEqual([]);
    const cold = [row('m3', '2026-03', 0.001), { ...row('m3', '2026-04', 0.001), missing_sources: missing }];
    expect(judgeRows(cold, [], { rules, notifySince: '2026-04', now, known: new Map() }).notices).toEqual([]);
  });
  it('takes back a recorded level its month no longer reaches: a resolved notice, and the state resolved', () => {
    const recorded: RecordedState[] = [{ mid: 'm1', network: 'mastercard', program: 'ecp', level: 'high', month: '2026-03', status: 'reached' }];
    const j = judgeRows([row('m1', '2026-03', 0.004)], recorded, { rules, notifySince: '2026-03', now, known: new Map() });
    expect(j.notices.map((n) => [n.kind, n.level, n.previous_level, n.month, n.notify])).toEqual([['resolved', 'high', null, '2026-03', true]]);
    expect(j.states.map((s) => [s.level, s.month, s.status, s.rank, s.ratio])).toEqual([['high', '2026-03', 'resolved', -1, 0.004]]);
    // A level recorded as resolved is not taken back again.
    const again = judgeRows([row('m1', '2026-03', 0.004)], [{ ...recorded[0], status: 'resolved' }], { rules, notifySince: '2026-03', now, known: new Map() });
    expect(again.notices).toEqual([]);
  });

  it('leaves out a state recorded as it is, and keeps one whose status, rank, figures or month-to-date flag changed', () => {
    const first = judgeRows(series, [], { rules, notifySince: '2026-03', now, known: new Map() }).states;
    const recorded: RecordedState[] = first.map((s) => ({ ...s }));
    const known = new Map(judgeRows(series, [], { rules, notifySince: '2026-03', now, known: new Map() }).notices.map((n) => [n.notice_id, n.notify]));
    expect(judgeRows(series, recorded, { rules, notifySince: '2026-03', now, known }).states).toEqual([]);
    // Read without its figures (a caller that has only the status), a recorded state counts as changed.
    const bare = recorded.map(({ mid, network, program, level, month, status }) => ({ mid, network, program, level, month, status }));
    expect(judgeRows(series, bare, { rules, notifySince: '2026-03', now, known }).states).toHaveLength(2);
    for (const change of [{ ratio: 0.0121 }, { numerator: null }, { denominator: 9_999 }, { rank: 3 }, { is_partial: true }, { status: 'projected' }]) {
      const one = [{ ...recorded[0], ...change }, recorded[1]];
      const states = judgeRows(series, one, { rules, notifySince: '2026-03', now, known }).states;
      expect(states.map((s) => [s.level, s.month, s.status])).toEqual([['low', '2026-02', 'reached']]);
    }
  });

  it('judges rows, recorded states and explanations the same whatever their order: series interleaved, months reversed', () => {
    const two = [
      row('m1', '2026-01', 0.005), row('m1', '2026-02', 0.012), row('m1', '2026-03', 0.025), row('m1', '2026-04', 0.004),
      row('m3', '2026-01', 0.021), row('m3', '2026-02', 0.013), row('m3', '2026-03', 0.003), row('m3', '2026-04', 0.022),
    ];
    const mixed = [two[7], two[0], two[5], two[2], two[4], two[1], two[6], two[3]];
    const opts = { rules, notifySince: '2026-01', now, known: new Map<string, boolean>() };
    const sorted = judgeRows(two, [], opts);
    // Recorded states of both MIDs, interleaved, one of them a level the figures no longer hold (taken back).
    const recorded: RecordedState[] = [...sorted.states.map((x) => ({ ...x })), { mid: 'm3', network: 'mastercard', program: 'ecp', level: 'high', month: '2026-02', status: 'reached' }];
    const shuffled = [...recorded].reverse();
    const byId = (xs: Array<{ notice_id: string }>) => xs.map((n) => JSON.stringify(n)).sort();
    const byKey = (xs: AlertStateRow[]) => xs.map((x) => JSON.stringify(x)).sort();
    const a = judgeRows(two, recorded, opts);
    const b = judgeRows(mixed, shuffled, opts);
    expect(a.notices.some((n) => n.kind === 'resolved' && n.mid === 'm3' && n.month === '2026-02')).toBe(true);
    expect(byId(b.notices)).toEqual(byId(a.notices));
    expect(byKey(b.states)).toEqual(byKey(a.states));
    // Explanations come from the oracle's months of the same rows (the batch's months are the SQL judge's shape, without streaks).
    const explained = (rows: RatioRow[]) => {
      const out: string[] = [];
      explainEach(rows, evaluateRows(rows, rules), evaluateProjections(rows, rules), rules, (r, e) => out.push(JSON.stringify([r.mid, r.month, e])));
      return out.sort();
    };
    expect(explained(mixed)).toEqual(explained(two));
  });

  it('records one state per level and month: a level reached in a month it was projected for is reached', () => {
    // April to date at 1.1 % (low), and its projection at the same figures (low too).
    const mtd = { ...row('m1', '2026-04', 0.011), is_partial: true };
    const { levels, projections } = oracleMonths([mtd, { ...mtd, is_projection: true }], rules);
    expect([levels, projections].map((ls) => ls.map((l) => [l.month, l.level, l.rank, l.is_partial, l.is_projection]))).toEqual([
      [['2026-04', 'low', 1, true, false]], [['2026-04', 'low', 1, true, true]],
    ]);
    const states = stateRows({ reached: levels, projected: projections, index: seriesIndex(levels), notices: [], now });
    expect(states.map((s) => [s.level, s.month, s.status, s.is_partial])).toEqual([['low', '2026-04', 'reached', true]]);
  });

  it('tells where a notice stands from its deliveries', () => {
    const d = (status: string, attempts: number): Delivery => ({ notifier: 'webhook', status, attempts, last_error: null, next_attempt_at: null, sent_at: null });
    expect(deliveryState(false, [d('sent', 1)])).toBe('history');
    expect(deliveryState(true, [])).toBe('unsent');
    expect(deliveryState(true, [d('pending', 0)])).toBe('pending');
    expect(deliveryState(true, [d('sent', 1), d('pending', 2)])).toBe('retrying');
    expect(deliveryState(true, [d('sent', 1), d('failed', 12)])).toBe('failed');
    expect(deliveryState(true, [d('sent', 1), d('sent', 3)])).toBe('sent');
  });
});
