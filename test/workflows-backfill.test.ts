import { describe, expect, it } from 'vitest';
import type { FetchAndLoadInput } from '../activities/types.ts';
import { backfill, OPEN_LISTED, type BackfillInput, type BackfillResult } from '../workflows/backfill.ts';
import { windowId } from '../lib/utc.ts';
import { callsOf, createFakes, type FakeState } from './workflows-fakes.ts';

const INPUT: BackfillInput = { from: '2025-11-10', to: '2026-02-20', kinds: ['chargebacks', 'prevention', 'mid_report'], windowDays: 14, parallelism: 3 };

const loadedKeys = (state: FakeState) =>
  callsOf(state, 'fetchAndLoad').map(([i]) => `${(i as FetchAndLoadInput).kind}:${windowId((i as FetchAndLoadInput).window)}`);

const doneState = (state: FakeState) =>
  Object.fromEntries([...state.done.entries()].map(([k, v]) => [k, [...v].sort()]).sort(([a], [b]) => String(a).localeCompare(String(b))));

describe('backfill', () => {
  it('splits the range into rolling windows, and calendar months for the MID report', async () => {
    const { acts, state } = createFakes();
    const r = await backfill(INPUT, acts);
    const keys = loadedKeys(state);
    // 2025-11-10 .. 2026-02-20 is 103 days: 8 windows of 14 days for each rolling kind; 4 months for MID.
    expect(keys.filter((k) => k.startsWith('chargebacks:'))).toHaveLength(8);
    expect(keys.filter((k) => k.startsWith('prevention:'))).toHaveLength(8);
    expect(keys.filter((k) => k.startsWith('mid_report:')).sort()).toEqual([
      'mid_report:2025-11-01..2025-11-30',
      'mid_report:2025-12-01..2025-12-31',
      'mid_report:2026-01-01..2026-01-31',
      'mid_report:2026-02-01..2026-02-20',
    ]);
    expect(keys).toContain('chargebacks:2025-11-10..2025-11-23');
    expect(keys).toContain('chargebacks:2026-02-16..2026-02-20');
    expect(r).toMatchObject({ status: 'done', planned: 20, loaded: 20, skipped: 0, records: 200, quarantined: 20 });
  });

  it('marks each window done after it loaded, then computes ratios without notices and publishes', async () => {
    const { acts, state } = createFakes();
    await backfill({ ...INPUT, kinds: ['prevention'] }, acts);
    expect(callsOf(state, 'markWindowDone')).toHaveLength(8);
    expect(callsOf(state, 'computeRatios')).toEqual([[{ asOf: '2026-02-20', notify: false }]]);
    expect(callsOf(state, 'publishSnapshot')).toHaveLength(1);
    expect(callsOf(state, 'deliverNotices')).toHaveLength(0);
    expect(state.runs).toMatchObject([{ workflow: 'backfill', status: 'ok', summary: { loaded: 8 } }]);
  });

  it('never runs more windows at once than its parallelism', async () => {
    for (const parallelism of [1, 2, 4]) {
      const { acts, state } = createFakes({ loadDelay: (n) => 1 + (n % 4) });
      await backfill({ ...INPUT, parallelism }, acts);
      expect(state.maxActive).toBe(parallelism);
    }
  });

  it('resumes a run killed half-way: the second run loads only the rest, and the end state equals an uninterrupted run', async () => {
    const uninterrupted = createFakes();
    await backfill(INPUT, uninterrupted.acts);

    const store = createFakes({ failAfterLoads: 7, loadDelay: (n) => 1 + (n % 3) });
    await expect(backfill(INPUT, store.acts)).rejects.toThrow(/scripted after 7/);
    const firstRun = new Set(callsOf(store.state, 'markWindowDone').map(([k, w]) => `${k}:${windowId(w as never)}`));
    expect(firstRun.size).toBe(7);
    expect(store.state.runs.at(-1)).toMatchObject({ status: 'failed' });

    // Second run against the same store, with the fault gone.
    store.options.failAfterLoads = undefined;
    const before = store.state.calls.length;
    const r = (await backfill(INPUT, store.acts)) as Extract<BackfillResult, { status: 'done' }>;
    const second = store.state.calls
      .slice(before)
      .filter((c) => c.name === 'fetchAndLoad')
      .map((c) => `${(c.args[0] as FetchAndLoadInput).kind}:${windowId((c.args[0] as FetchAndLoadInput).window)}`);
    expect(second).toHaveLength(13);
    for (const k of second) expect(firstRun.has(k)).toBe(false);
    expect(r).toMatchObject({ status: 'done', skipped: 7, loaded: 13 });

    expect(doneState(store.state)).toEqual(doneState(uninterrupted.state));
    expect([...store.state.loads.entries()].sort()).toEqual([...uninterrupted.state.loads.entries()].sort());
  });

  it('skips everything when run again after it finished', async () => {
    const { acts, state } = createFakes();
    await backfill(INPUT, acts);
    const loads = callsOf(state, 'fetchAndLoad').length;
    const r = await backfill(INPUT, acts);
    expect(callsOf(state, 'fetchAndLoad').length).toBe(loads);
    expect(r).toMatchObject({ status: 'done', skipped: 20, loaded: 0 });
  });

  it('pauses when the driver asks and continues with the remaining windows only', async () => {
    const { acts, state } = createFakes();
    let asked = 0;
    const first = await backfill({ ...INPUT, parallelism: 2 }, acts, { shouldPause: () => ++asked > 5 });
    expect(first.status).toBe('continue');
    if (first.status !== 'continue') return;
    expect(first.next.pending!.length + first.loaded).toBe(20);
    expect(state.runs).toHaveLength(0); // a pause is not a finished run
    expect(callsOf(state, 'publishSnapshot')).toHaveLength(0);

    let input: BackfillInput = first.next;
    let result: BackfillResult = first;
    for (let i = 0; i < 10 && result.status === 'continue'; i++) {
      result = await backfill(input, acts, { shouldPause: () => false });
      if (result.status === 'continue') input = result.next;
    }
    expect(result).toMatchObject({ status: 'done', planned: 20, loaded: 20 });
    expect(new Set(loadedKeys(state)).size).toBe(20);
    expect(loadedKeys(state)).toHaveLength(20);
  });

  it('continues as new every windowsPerRun windows, carrying its counts', async () => {
    const { acts } = createFakes();
    let input: BackfillInput = { ...INPUT, windowsPerRun: 6 };
    const statuses: string[] = [];
    let result: BackfillResult | undefined;
    for (let i = 0; i < 10; i++) {
      result = await backfill(input, acts);
      statuses.push(result.status);
      if (result.status === 'done') break;
      input = result.next;
    }
    expect(statuses).toEqual(['continue', 'continue', 'continue', 'done']);
    expect(result).toMatchObject({ status: 'done', planned: 20, loaded: 20, records: 200 });
  });

  it("records a window as done only when the service answered after its end; one still running is loaded, left open, and fetched again by the next run", async () => {
    // The service's clock stands at 2026-01-20 12:00 while the range reaches 2026-02-20.
    const { acts, state, options } = createFakes({ reportServiceTime: '2026-01-20T12:00:00Z' });
    const input: BackfillInput = { ...INPUT, kinds: ['chargebacks', 'mid_report'] };
    const r = (await backfill(input, acts)) as Extract<BackfillResult, { status: 'done' }>;
    expect(r).toMatchObject({ status: 'done', planned: 12, loaded: 12, open: 5, serviceTime: '2026-01-20T12:00:00Z' });
    // Chargebacks windows of 14 days from 2025-11-10: those ending 2026-01-18 and before are whole.
    expect(doneState(state)).toEqual({
      chargebacks: ['2025-11-10..2025-11-23', '2025-11-24..2025-12-07', '2025-12-08..2025-12-21', '2025-12-22..2026-01-04', '2026-01-05..2026-01-18'],
      mid_report: ['2025-11-01..2025-11-30', '2025-12-01..2025-12-31'],
    });
    expect(r.openWindows.sort()).toEqual([
      'chargebacks:2026-01-19..2026-02-01',
      'chargebacks:2026-02-02..2026-02-15',
      'chargebacks:2026-02-16..2026-02-20',
      'mid_report:2026-01-01..2026-01-31',
      'mid_report:2026-02-01..2026-02-20',
    ]);
    expect(r.warning).toMatch(/^5 windows reach past the service's clock \(2026-01-20T12:00:00Z\): loaded with the data so far but not recorded as done/);
    expect(r.warning).toContain('chargebacks:2026-01-19..2026-02-01');
    expect(state.runs.at(-1)).toMatchObject({ status: 'ok', summary: { open: 5, warning: r.warning } });

    // The next run (the service a month on) fetches exactly the open windows again, and finishes them.
    options.reportServiceTime = '2026-02-21T00:00:00Z';
    const before = callsOf(state, 'fetchAndLoad').length;
    const again = (await backfill(input, acts)) as Extract<BackfillResult, { status: 'done' }>;
    expect(loadedKeys(state).slice(before).sort()).toEqual(r.openWindows.sort());
    expect(again).toMatchObject({ skipped: 7, loaded: 5, open: 0, openWindows: [] });
    expect(again.warning).toBeUndefined();
  });

  it('names at most OPEN_LISTED open windows in its result and counts them all', async () => {
    const { acts } = createFakes({ reportServiceTime: '2025-01-01T00:00:00Z' });
    const r = (await backfill({ ...INPUT, kinds: ['chargebacks'], windowDays: 1 }, acts)) as Extract<BackfillResult, { status: 'done' }>;
    expect(r.open).toBe(103);
    expect(r.openWindows).toHaveLength(OPEN_LISTED);
    expect(r.warning).toMatch(/, and 83 more\)$/);
  });

  it('with force fetches every window of the range again, also those recorded as done', async () => {
    const { acts, state } = createFakes();
    await backfill(INPUT, acts);
    const before = callsOf(state, 'fetchAndLoad').length;
    const windowsDoneAsked = callsOf(state, 'windowsDone').length;
    const r = await backfill({ ...INPUT, force: true }, acts);
    expect(callsOf(state, 'fetchAndLoad').length - before).toBe(20);
    expect(callsOf(state, 'windowsDone').length).toBe(windowsDoneAsked);
    expect(r).toMatchObject({ status: 'done', skipped: 0, loaded: 20 });
    expect(state.runs.at(-1)).toMatchObject({ summary: { force: true } });
  });

  it('a forced re-fetch that finds a window recorded as done still running removes its mark', async () => {
    // Marks recorded wrongly (by a cbp before issue #10) for windows in the service's future.
    const { acts, state, options } = createFakes();
    await backfill({ ...INPUT, kinds: ['prevention'] }, acts);
    expect(state.done.get('prevention')?.size).toBe(8);
    options.reportServiceTime = '2026-01-01T00:00:00Z';
    const r = await backfill({ ...INPUT, kinds: ['prevention'], force: true }, acts);
    expect(r).toMatchObject({ open: 5 });
    expect([...(state.done.get('prevention') ?? [])].sort()).toEqual(['2025-11-10..2025-11-23', '2025-11-24..2025-12-07', '2025-12-08..2025-12-21']);
  });

  it("judges a result without a service time (an older worker's) by the workflow clock", async () => {
    const late = createFakes({ reportServiceTime: null, now: '2026-03-15T02:30:00Z' });
    expect(await backfill(INPUT, late.acts)).toMatchObject({ open: 0 });
    const early = createFakes({ reportServiceTime: null, now: '2026-01-01T00:00:00Z' });
    const r = await backfill(INPUT, early.acts);
    expect(r.open).toBeGreaterThan(0);
    // markWindowDone is given the time the workflow judged by, so the store records by the same rule.
    for (const [, , result] of callsOf(early.state, 'markWindowDone')) expect((result as { serviceTime?: string }).serviceTime).toMatch(/^2026-01-01T/);
  });

  it('carries the open windows across continue-as-new', async () => {
    const { acts } = createFakes({ reportServiceTime: '2026-01-20T12:00:00Z' });
    let input: BackfillInput = { ...INPUT, windowsPerRun: 6 };
    let result: BackfillResult | undefined;
    for (let i = 0; i < 10; i++) {
      result = await backfill(input, acts);
      if (result.status === 'done') break;
      input = result.next;
    }
    expect(result).toMatchObject({ status: 'done', planned: 20, loaded: 20, open: 8, serviceTime: '2026-01-20T12:00:00Z' });
  });

  it('refuses a range that starts after it ends', async () => {
    const { acts, state } = createFakes();
    await expect(backfill({ ...INPUT, from: '2026-03-01', to: '2026-02-01' }, acts)).rejects.toMatchObject({ code: 'CBP_ERR_WINDOW_RANGE' });
    expect(state.calls).toEqual([]);
  });
});
