// The alert state machine over a real store (evaluateAlerts: the ratio table judged in SQL, then notices): reached once,
// escalated, resolved, projected; idempotent; states and ratio rows rewritten only from the months that changed.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAfterLoad, evaluateAlerts, listAlerts } from '../alerts/engine.ts';
import { deriveNotices, revisedNotices } from '../alerts/notices.ts';
import { noticeId } from '../alerts/notice-text.ts';
import { seriesIndex } from '../alerts/judged-month.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
const rules = loadRules();
const now = new Date('2026-06-10T06:00:00Z');

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  const mc = (month: string, cb: number, endDay?: number) => ({ mid: 'm1', network: 'mastercard' as const, month, cb, tx: 10_000, endDay });
  await insertStats(store, [
    mc('2025-12', 10),
    mc('2026-01', 200), // 2 % of December: ECM
    mc('2026-02', 350), // 3.5 %, 350: HECM
    mc('2026-03', 10),
    mc('2026-04', 10),
    mc('2026-05', 10), // third month below: left
    mc('2026-06', 60, 10), // 0.6 % in 10 of 30 days; projected 180 = 1.8 %: ECM projected
    // A healthy MID
    { mid: 'ok', network: 'mastercard', month: '2026-05', cb: 1, tx: 10_000 },
    { mid: 'ok', network: 'mastercard', month: '2026-06', cb: 1, tx: 10_000, endDay: 10 },
  ]);
});
afterAll(() => cleanup(store, dir));

describe('alert notices', () => {
  it('notifies once when a level is reached, on escalation, on resolution, and for a projected breach', async () => {
    const r = await evaluateAlerts(store, { asOf: now, rules, now });
    const got = r.newNotices.filter((n) => n.program === 'ecp').map((n) => [n.kind, n.level, n.month, n.notify]);
    expect(got).toEqual([
      ['reached', 'ecm', '2026-01', false],
      ['escalated', 'hecm', '2026-02', false],
      ['resolved', 'hecm', '2026-05', true],
      ['projected', 'ecm', '2026-06', true],
    ]);
    const projected = r.newNotices.find((n) => n.kind === 'projected')!;
    expect(projected.is_projection).toBe(true);
    expect(projected.message).toContain('PROJECTION');
    expect(projected.ratio).toBeCloseTo(0.018, 12);
    expect(r.newNotices.some((n) => n.mid === 'ok')).toBe(false);
  });

  it('writes nothing new when the same data is evaluated again', async () => {
    const again = await evaluateAlerts(store, { asOf: now, rules, now });
    expect(again.newNotices).toEqual([]);
    const history = await listAlerts(store);
    expect(history.filter((h) => h.mid === 'm1')).toHaveLength(4);
  });

  it('keeps one state per mid × network × program × level × month', async () => {
    const states = await store.all<{ level: string; month: string; status: string }>(
      "SELECT level, month, status FROM alert_states WHERE mid = 'm1' ORDER BY month, level",
    );
    expect(states.map((s) => `${s.month} ${s.level} ${s.status}`)).toEqual([
      '2026-01 ecm reached',
      '2026-02 hecm reached',
      '2026-03 hecm reached',
      '2026-04 hecm reached',
      '2026-05 hecm resolved',
      '2026-06 ecm projected',
    ]);
  });

  it('rewrites a state only when it changed (updated_at when it last did, first_seen_at when first recorded), and ratio rows from the first month changed on', async () => {
    const own = await tempStore();
    try {
      const mc = (month: string, cb: number) => ({ mid: 'm1', network: 'mastercard' as const, month, cb, tx: 10_000 });
      await insertStats(own.store, [mc('2025-12', 10), mc('2026-01', 200), mc('2026-02', 210), mc('2026-03', 220)]);
      const stamps = async () => Object.fromEntries((await own.store.all<{ k: string; first: string; updated: string; ratio: number }>(
        `SELECT level || ' ' || month AS k, first_seen_at::VARCHAR AS first, updated_at::VARCHAR AS updated, ratio FROM alert_states WHERE mid = 'm1'`,
      )).map((r) => [r.k, [r.first, r.updated, r.ratio]]));
      const t1 = new Date('2026-04-02T06:00:00Z');
      await evaluateAlerts(own.store, { asOf: t1, rules, now: t1 });
      const first = await stamps();
      expect(Object.keys(first).sort()).toEqual(['ecm 2026-01', 'ecm 2026-02', 'ecm 2026-03']);
      expect(Object.values(first).every(([f, u]) => f === '2026-04-02 06:00:00' && u === f)).toBe(true);
      // Everything judged again, nothing changed: nothing rewritten.
      const full = await evaluateAlerts(own.store, { asOf: t1, rules, now: new Date('2026-04-03T06:00:00Z'), full: true });
      expect(full.levelsReached).toBeGreaterThanOrEqual(3);
      expect(await stamps()).toEqual(first);
      // February revised (still ECM): its state alone is rewritten, its first_seen_at kept.
      await own.store.run("DELETE FROM mid_stats WHERE mid = 'm1' AND window_start = DATE '2026-02-01'");
      await insertStats(own.store, [mc('2026-02', 250)]);
      await evaluateAlerts(own.store, { asOf: t1, rules, now: new Date('2026-04-04T06:00:00Z') });
      const after = await stamps();
      expect(after['ecm 2026-02']).toEqual(['2026-04-02 06:00:00', '2026-04-04 06:00:00', 0.025]);
      expect(after['ecm 2026-01']).toEqual(first['ecm 2026-01']);
      expect(after['ecm 2026-03']).toEqual(first['ecm 2026-03']);
      // The ratio table likewise: a full evaluation writes every row again (judged_at, shown as explained_at, now),
      // the same values; after February is revised again, the next evaluation judges from February on (its rows and
      // the later months' rewritten), the months before left as they were.
      const judged = async () => Object.fromEntries((await own.store.all<{ k: string; at: string; reason: string | null; closeness: number; state: string | null }>(
        `SELECT program || ' ' || metric || ' ' || month || ' ' || is_projection AS k, explained_at::VARCHAR AS at, reason, closeness, state
           FROM mart_ratios WHERE mid = 'm1'`,
      )).map((r) => [r.k, r]));
      const before = await judged();
      const full2 = await evaluateAlerts(own.store, { asOf: t1, rules, now: new Date('2026-04-05T06:00:00Z'), full: true });
      expect(full2.fromMonth).toBeNull();
      const again = await judged();
      expect(Object.keys(again).sort()).toEqual(Object.keys(before).sort());
      const values = (x: Record<string, { reason: string | null; closeness: number; state: string | null }>) =>
        Object.fromEntries(Object.entries(x).map(([k, r]) => [k, [r.reason, r.closeness, r.state]]));
      expect(values(again)).toEqual(values(before));
      for (const k of Object.keys(again)) expect([k, again[k].at > before[k].at]).toEqual([k, true]);
      await own.store.run("DELETE FROM mid_stats WHERE mid = 'm1' AND window_start = DATE '2026-02-01'");
      await insertStats(own.store, [mc('2026-02', 260)]);
      const inc = await evaluateAlerts(own.store, { asOf: t1, rules, now: new Date('2026-04-06T06:00:00Z') });
      expect(inc.fromMonth).toBe('2026-02');
      const revised = await judged();
      expect(Object.keys(revised).sort()).toEqual(Object.keys(again).sort());
      const feb = 'ecp count 2026-02 false';
      expect(revised[feb].at > again[feb].at).toBe(true);
      expect(revised[feb].closeness).not.toBe(again[feb].closeness);
      const kept = Object.keys(again).filter((k) => !k.includes('2026-02') && !k.includes('2026-03'));
      expect(kept.length).toBeGreaterThan(0);
      for (const k of kept) expect([k, revised[k].at]).toEqual([k, again[k].at]);
      for (const k of Object.keys(again).filter((x) => x.includes('2026-03'))) expect([k, revised[k].at > again[k].at]).toEqual([k, true]);
    } finally {
      await cleanup(own.store, own.dir);
    }
  });

  it('writes the ratio table whole again on a full evaluation: a row altered by hand is set right, a row held twice held once', async () => {
    const own = await tempStore();
    try {
      const mc = (month: string, cb: number) => ({ mid: 'm1', network: 'mastercard' as const, month, cb, tx: 10_000 });
      await insertStats(own.store, [mc('2025-12', 10), mc('2026-01', 200), mc('2026-02', 210), mc('2026-03', 220)]);
      const t1 = new Date('2026-04-02T06:00:00Z');
      await evaluateAlerts(own.store, { asOf: t1, rules, now: t1 });
      const rows = async () => own.store.all<{ k: string; reason: string | null; state: string | null; closeness: number | null }>(
        `SELECT program || ' ' || metric || ' ' || month || ' ' || is_projection AS k, reason, state, closeness
           FROM mart_ratios WHERE mid = 'm1' ORDER BY k`);
      const before = await rows();
      expect(before.length).toBeGreaterThanOrEqual(4);
      // January's row with a reason and state of its own; February's held twice.
      await own.store.run("UPDATE ratio_mart SET reason = 'stale', state = 'clear' WHERE mid = 'm1' AND program = 'ecp' AND metric = 'count' AND month = '2026-01' AND NOT is_projection");
      await own.store.run("INSERT INTO ratio_mart SELECT * FROM ratio_mart WHERE mid = 'm1' AND program = 'ecp' AND metric = 'count' AND month = '2026-02' AND NOT is_projection");
      expect((await rows()).length).toBe(before.length + 1);
      await evaluateAlerts(own.store, { asOf: t1, rules, now: new Date('2026-04-03T06:00:00Z'), full: true });
      expect(await rows()).toEqual(before);
    } finally {
      await cleanup(own.store, own.dir);
    }
  });

  it('turns the projection into a reached notice once observed figures reach the level', async () => {
    await insertStats(store, [{ mid: 'm1', network: 'mastercard', month: '2026-06', cb: 160, tx: 10_000, endDay: 20 }]);
    const r = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    expect(r.noticesQueued).toBe(1);
    expect(r.alerts).toBe(1);
    const latest = (await listAlerts(store)).find((a) => a.month === '2026-06' && a.kind === 'reached');
    expect(latest).toMatchObject({ level: 'ecm', is_partial: true, notify: true });
  });

  it('records a backfill as history without marking notices for delivery', async () => {
    await insertStats(store, [
      { mid: 'b1', network: 'discover', month: '2026-01', cb: 1, tx: 5_000 },
      { mid: 'b1', network: 'discover', month: '2026-02', cb: 150, tx: 5_000 },
    ]);
    const r = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: false, now });
    expect(r.noticesQueued).toBe(0);
    const b1 = (await listAlerts(store, { mid: 'b1' }))[0];
    expect(b1).toMatchObject({ kind: 'reached', level: 'excessive', notify: false });
  });

  it('pages, once, for a current-month breach a backfill recorded as history', async () => {
    await insertStats(store, [
      { mid: 'c1', network: 'discover', month: '2026-04', cb: 1, tx: 5_000 },
      { mid: 'c1', network: 'discover', month: '2026-05', cb: 150, tx: 5_000 },
    ]);
    const backfill = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: false, now });
    expect(backfill.noticesQueued).toBe(0);
    expect((await listAlerts(store, { mid: 'c1' }))[0]).toMatchObject({ kind: 'reached', month: '2026-05', notify: false });
    const nightly = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    expect(nightly.noticesQueued).toBe(1);
    expect((await listAlerts(store, { mid: 'c1' }))[0]).toMatchObject({ kind: 'reached', month: '2026-05', notify: true });
    const again = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    expect(again.noticesQueued).toBe(0);
  });

  it('pages, once, a level reached months ago (history) that is still in force', async () => {
    const s1 = (month: string, cb: number, mid = 's1') => ({ mid, network: 'mastercard' as const, month, cb, tx: 10_000 });
    await insertStats(store, [s1('2025-12', 10), s1('2026-01', 200), s1('2026-02', 200), s1('2026-03', 200), s1('2026-04', 200), s1('2026-05', 200)]);
    // s2 the same: two MIDs in one batch.
    await insertStats(store, ['2025-12', '2026-01', '2026-02', '2026-03', '2026-04', '2026-05'].map((m, i) => s1(m, i ? 200 : 10, 's2')));
    await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: false, now });
    const history = await listAlerts(store, { mid: 's1' });
    expect(history.map((a) => [a.kind, a.level, a.month, a.notify])).toEqual([['reached', 'ecm', '2026-01', false]]);
    // What evaluateAfterLoad with notify runs: the level standing since a month before those judged is known from each
    // MID's own prior notice.
    await evaluateAlerts(store, { asOf: '2026-06-20T06:00:00Z', rules, now });
    expect((await listAlerts(store, { mid: 's1' })).map((a) => [a.kind, a.month, a.notify])).toEqual([['reached', '2026-01', true]]);
    const again = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    expect(again.noticesQueued).toBe(0);
    expect((await listAlerts(store, { mid: 's2' })).map((a) => [a.kind, a.month, a.notify])).toEqual([['reached', '2026-01', true]]);
  });

  it('takes back a level when revised figures no longer reach any threshold, once, paging whoever was paged', async () => {
    const r1 = (month: string, cb: number) => ({ mid: 'r1', network: 'mastercard' as const, month, cb, tx: 10_000 });
    await insertStats(store, [r1('2026-04', 10), r1('2026-05', 200)]);
    await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    expect((await listAlerts(store, { mid: 'r1' })).map((a) => [a.kind, a.level, a.month, a.notify])).toEqual([['reached', 'ecm', '2026-05', true]]);
    // The May report is re-fetched with corrected figures: 0.2 %, below every threshold, in every month.
    await store.run("DELETE FROM mid_stats WHERE mid = 'r1' AND window_start = DATE '2026-05-01'");
    await insertStats(store, [r1('2026-05', 20)]);
    const revised = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    expect(revised.noticesQueued).toBe(1);
    const back = (await listAlerts(store, { mid: 'r1' })).find((a) => a.kind === 'resolved');
    expect(back).toMatchObject({ level: 'ecm', previous_level: null, month: '2026-05', notify: true });
    expect(back!.message).toContain('r1 mastercard ecp: level ecm left in 2026-05');
    const states = await store.all("SELECT level, month, status FROM alert_states WHERE mid = 'r1' ORDER BY month, level");
    expect(states).toEqual([{ level: 'ecm', month: '2026-05', status: 'resolved' }]);
    const again = await evaluateAlerts(store, { asOf: '2026-06-20T06:00:00Z', rules, now });
    expect(again.newNotices.filter((n) => n.mid === 'r1')).toEqual([]);
  });

  it('does not take back a level whose month has no figures now, nor a month still to date', () => {
    const base = { mid: 'x', network: 'mastercard' as const, program: 'ecp' as const, met: [], row: null, rule: null, is_projection: false };
    const levels = [
      { ...base, month: '2026-05', level: null, rank: null, is_partial: true },
      { ...base, month: '2026-03', level: 'ecm', rank: 1, is_partial: false },
    ];
    const recorded = [
      { mid: 'x', network: 'mastercard', program: 'ecp', level: 'ecm', month: '2026-05' },
      { mid: 'x', network: 'mastercard', program: 'ecp', level: 'ecm', month: '2026-04' },
      { mid: 'x', network: 'mastercard', program: 'ecp', level: 'ecm', month: '2026-03' },
    ];
    expect(revisedNotices(seriesIndex(levels as never), recorded, { notifySince: '2026-05', now: now.toISOString(), rankOf: () => 1 })).toEqual([]);
  });

  it('takes back every level a revised month no longer holds in one run, and says nothing more after', async () => {
    const r2 = (month: string, cb: number) => ({ mid: 'r2', network: 'mastercard' as const, month, cb, tx: 10_000 });
    const may = async (cb: number) => {
      await store.run("DELETE FROM mid_stats WHERE mid = 'r2' AND window_start = DATE '2026-05-01'");
      await insertStats(store, [r2('2026-05', cb)]);
      return evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    };
    await insertStats(store, [r2('2026-04', 10)]);
    await may(200); // ECM
    await may(400); // HECM: May is recorded at both levels
    expect((await may(20)).noticesQueued).toBe(2); // neither holds now
    const back = (await listAlerts(store, { mid: 'r2' })).filter((a) => a.kind === 'resolved').map((a) => [a.level, a.month, a.notify]).sort();
    expect(back).toEqual([['ecm', '2026-05', true], ['hecm', '2026-05', true]]);
    for (let run = 0; run < 2; run++) expect((await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now })).noticesQueued).toBe(0);
  });

  it('takes nothing back when only the ranks are renumbered, and pages no one for old months when thresholds rise', async () => {
    const r3 = (month: string, cb: number) => ({ mid: 'r3', network: 'mastercard' as const, month, cb, tx: 10_000 });
    await insertStats(store, [r3('2025-12', 10), r3('2026-01', 200), r3('2026-02', 200), r3('2026-03', 200), r3('2026-04', 200), r3('2026-05', 200)]);
    await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    const shift = (d: number, up = 0) => ({
      ...rules,
      rules: rules.rules.map((x) => (x.network === 'mastercard' ? { ...x, rank: x.rank - d, ratio_threshold: x.ratio_threshold + up } : x)),
    });
    const renumbered = await evaluateAlerts(store, { asOf: '2026-06-20T06:00:00Z', rules: shift(1), now });
    expect(renumbered.newNotices.filter((n) => n.mid === 'r3')).toEqual([]);
    // ECM at 2.5 %: the months recorded at ECM no longer hold it; history only, except the month notices go out for.
    const raised = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules: shift(0, 0.01), notify: false, now });
    expect(raised.noticesQueued).toBe(0);
    const back = (await listAlerts(store, { mid: 'r3' })).filter((a) => a.kind === 'resolved');
    expect(back.map((a) => a.month).sort()).toEqual(['2026-01', '2026-02', '2026-03', '2026-04', '2026-05']);
    expect(back.every((a) => a.level === 'ecm' && !a.notify)).toBe(true);
  });

  it('pages a first run once for a level it meets in several months: the newest month, the rest as history', async () => {
    // Discover excessive (leave after one month below): reached in April, left in May, reached again in June
    // to date. A first run sees all of it; May's "left" and June's "reached" are one story.
    const d1 = (month: string, cb: number, endDay?: number) => ({ mid: 'd1', network: 'discover' as const, month, cb, tx: 5_000, endDay });
    await insertStats(store, [d1('2026-03', 1), d1('2026-04', 150), d1('2026-05', 1), d1('2026-06', 150, 20)]);
    const r = await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    const d1Notices = (await listAlerts(store, { mid: 'd1' })).map((a) => [a.kind, a.month, a.notify]).sort();
    expect(d1Notices).toEqual([['reached', '2026-04', false], ['reached', '2026-06', true], ['resolved', '2026-05', false]]);
    expect(r.noticesQueued).toBe(1);
    // Closed months, a wider paging window (an operator's evaluate): reached, left, reached again: May pages.
    const d2 = (month: string, cb: number) => ({ mid: 'd2', network: 'discover' as const, month, cb, tx: 5_000 });
    await insertStats(store, [d2('2026-02', 1), d2('2026-03', 150), d2('2026-04', 1), d2('2026-05', 150)]);
    const wide = await evaluateAlerts(store, { asOf: '2026-06-20T06:00:00Z', rules, now, notifySince: '2026-03' });
    expect(wide.newNotices.filter((n) => n.mid === 'd2').map((n) => [n.kind, n.month, n.notify])).toEqual([
      ['reached', '2026-03', false], ['resolved', '2026-04', false], ['reached', '2026-05', true],
    ]);
  });

  it('still pages each change run by run, and a month an earlier run paged that revised figures take back', async () => {
    const d3 = (month: string, cb: number, endDay?: number) => ({ mid: 'd3', network: 'discover' as const, month, cb, tx: 5_000, endDay });
    await insertStats(store, [d3('2026-04', 1), d3('2026-05', 150, 20)]);
    await evaluateAfterLoad(store, { asOf: '2026-05-20T06:00:00Z', rules, notify: true, now });
    expect((await listAlerts(store, { mid: 'd3' })).map((a) => [a.kind, a.month, a.notify])).toEqual([['reached', '2026-05', true]]);
    // May closes below the threshold, June to date is above it: May's level is taken back, June's is new.
    await store.run("DELETE FROM mid_stats WHERE mid = 'd3' AND window_start = DATE '2026-05-01'");
    await insertStats(store, [d3('2026-05', 1), d3('2026-06', 150, 20)]);
    await evaluateAfterLoad(store, { asOf: '2026-06-20T06:00:00Z', rules, notify: true, now });
    const d3Notices = (await listAlerts(store, { mid: 'd3' })).map((a) => [a.kind, a.month, a.notify]).sort();
    expect(d3Notices).toEqual([['reached', '2026-05', true], ['reached', '2026-06', true], ['resolved', '2026-05', true]]);
  });

  it('derives notice ids from what the notice is about, and from nothing else', () => {
    const id = noticeId('reached', 'm', 'visa', 'vamp', 'excessive', '2026-01');
    // The same text in every release: a re-run's notice must find the first one's id (the outbox's key).
    expect(id).toBe('ntc_' + createHash('sha256').update(['reached', 'm', 'visa', 'vamp', 'excessive', '2026-01'].join('\u0000')).digest('hex').slice(0, 32));
    // Each part counts, and parts do not run into each other ('m1' + 'visa' is not 'm' + '1visa').
    const others = [noticeId('resolved', 'm', 'visa', 'vamp', 'excessive', '2026-01'), noticeId('reached', 'm2', 'visa', 'vamp', 'excessive', '2026-01'),
      noticeId('reached', 'm', 'mastercard', 'vamp', 'excessive', '2026-01'), noticeId('reached', 'm', 'visa', 'vdmp', 'excessive', '2026-01'),
      noticeId('reached', 'm', 'visa', 'vamp', 'early_warning', '2026-01'), noticeId('reached', 'm', 'visa', 'vamp', 'excessive', '2026-02'),
      noticeId('reached', 'm1', 'visa', 'vamp', 'excessive', '2026-01'), noticeId('reached', 'm', '1visa', 'vamp', 'excessive', '2026-01')];
    expect(new Set([id, ...others]).size).toBe(others.length + 1);
    expect(deriveNotices(seriesIndex([]), [], { notifySince: '2026-01', now: now.toISOString() })).toEqual([]);
  });
});
