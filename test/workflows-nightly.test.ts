import { describe, expect, it } from 'vitest';
import type { FetchAndLoadInput, RunRecord } from '../activities/types.ts';
import { ingestEvents } from '../workflows/ingest.ts';
import { nightly } from '../workflows/nightly.ts';
import { windowId } from '../lib/utc.ts';
import { callsOf, createFakes } from './workflows-fakes.ts';

const loaded = (calls: unknown[][]) =>
  calls.map(([i]) => `${(i as FetchAndLoadInput).kind}:${windowId((i as FetchAndLoadInput).window)}`).sort();

describe('nightly', () => {
  it('covers the trailing windows up to asOf for each report, and the calendar months for the MID report', async () => {
    const { acts, state } = createFakes({ now: '2026-05-02T09:00:00Z' });
    const r = await nightly({ asOf: '2026-03-15T02:30:00Z', lookbackDays: 30, windowDays: 10 }, acts);
    expect(loaded(callsOf(state, 'fetchAndLoad'))).toEqual(
      [
        'chargebacks:2026-02-14..2026-02-23',
        'chargebacks:2026-02-24..2026-03-05',
        'chargebacks:2026-03-06..2026-03-15',
        'prevention:2026-02-14..2026-02-23',
        'prevention:2026-02-24..2026-03-05',
        'prevention:2026-03-06..2026-03-15',
        'mid_report:2026-02-01..2026-02-28',
        'mid_report:2026-03-01..2026-03-15',
      ].sort(),
    );
    expect(r.asOf).toBe('2026-03-15T02:30:00Z');
    expect(r.windows).toHaveLength(8);
  });

  it('uses asOf, not the clock: a late re-run covers the same days', async () => {
    const early = createFakes({ now: '2026-03-15T02:30:05Z' });
    const late = createFakes({ now: '2026-03-19T17:00:00Z' });
    await nightly({ asOf: '2026-03-15T02:30:00Z', windowDays: 7 }, early.acts);
    await nightly({ asOf: '2026-03-15T02:30:00Z', windowDays: 7 }, late.acts);
    expect(loaded(callsOf(late.state, 'fetchAndLoad'))).toEqual(loaded(callsOf(early.state, 'fetchAndLoad')));
  });

  it('defaults asOf to its start and the lookback to 60 days', async () => {
    const { acts, state } = createFakes({ now: '2026-03-15T02:30:00Z' });
    await nightly({ windowDays: 60, kinds: ['chargebacks'] }, acts);
    expect(loaded(callsOf(state, 'fetchAndLoad'))).toEqual(['chargebacks:2026-01-15..2026-03-15']);
  });

  it('runs the steps in order: reports, events, enrichment, ratios with notices, delivery, snapshot, run record', async () => {
    const { acts, state } = createFakes();
    await nightly({ asOf: '2026-03-15T02:30:00Z', windowDays: 30, kinds: ['prevention'] }, acts);
    const order = state.calls.map((c) => c.name).filter((n, i, a) => a[i - 1] !== n);
    expect(order).toEqual(['fetchAndLoad', 'ingestEvents', 'enrich', 'computeRatios', 'deliverNotices', 'publishSnapshot', 'recordRun']);
    expect(callsOf(state, 'computeRatios')[0]).toEqual([{ asOf: '2026-03-15', notify: true }]);
  });

  it('records the run with what it did', async () => {
    const { acts, state } = createFakes();
    const r = await nightly({ asOf: '2026-03-15T02:30:00Z', windowDays: 30, kinds: ['prevention'], runId: 'run-1' }, acts);
    expect(state.runs).toHaveLength(1);
    const run = state.runs[0] as RunRecord;
    expect(run).toMatchObject({ runId: 'run-1', workflow: 'nightly', status: 'ok', asOf: '2026-03-15T02:30:00Z' });
    expect(run.summary).toMatchObject({ windows: 2, records: 20, quarantined: 2, events: 40, alerts: 1, noticesSent: 1 });
    expect(r.runId).toBe('run-1');
  });

  it('bounds the report downloads running at once', async () => {
    const { acts, state } = createFakes({ loadDelay: (n) => 1 + (n % 3) });
    await nightly({ asOf: '2026-03-15T02:30:00Z', windowDays: 3, lookbackDays: 60, parallelism: 3 }, acts);
    expect(callsOf(state, 'fetchAndLoad').length).toBeGreaterThan(20);
    expect(state.maxActive).toBe(3);
  });

  it('records a failed run with the error and rethrows it', async () => {
    const { acts, state } = createFakes({ failAfterLoads: 1 });
    await expect(nightly({ asOf: '2026-03-15T02:30:00Z', windowDays: 7, parallelism: 1 }, acts)).rejects.toThrow(/scripted after 1/);
    expect(state.runs).toHaveLength(1);
    expect(state.runs[0]).toMatchObject({ workflow: 'nightly', status: 'failed', error: expect.stringMatching(/report download failed/) });
    expect(callsOf(state, 'publishSnapshot')).toHaveLength(0);
  });

  it('refuses bad input before calling anything', async () => {
    const { acts, state } = createFakes();
    await expect(nightly({ windowDays: 0 }, acts)).rejects.toMatchObject({ code: 'CBP_ERR_WORKFLOW_INPUT' });
    await expect(nightly({ windowDays: 7, kinds: ['orders' as never] }, acts)).rejects.toThrow(/unknown report kind/);
    await expect(nightly({ windowDays: 7, asOf: 'soon' }, acts)).rejects.toMatchObject({ code: 'CBP_ERR_WINDOW_RANGE' });
    expect(state.calls).toEqual([]);
  });
});

describe('nightly and the service clock', () => {
  it("marks the windows the service had not finished when it answered; asOf's own day is partial and no cause for a warning", async () => {
    const { acts } = createFakes({ reportServiceTime: '2026-03-15T02:30:07Z' });
    const r = await nightly({ asOf: '2026-03-15T02:30:00Z', lookbackDays: 30, windowDays: 10 }, acts);
    expect(r.windows.filter((w) => w.open).map((w) => w.task).sort()).toEqual(
      ['chargebacks:2026-03-06..2026-03-15', 'mid_report:2026-03-01..2026-03-15', 'prevention:2026-03-06..2026-03-15'],
    );
    expect(r.serviceTime).toBe('2026-03-15T02:30:07Z');
    expect(r.warning).toBeUndefined();
  });

  it('warns when the service clock is before the day the run covers: those windows hold no data yet', async () => {
    const { acts, state } = createFakes({ reportServiceTime: '2026-01-01T00:00:00Z' });
    const r = await nightly({ asOf: '2026-03-15T02:30:00Z', lookbackDays: 30, windowDays: 10 }, acts);
    expect(r.warning).toMatch(/^the service's clock \(2026-01-01T00:00:00Z\) is before the day this run covers \(2026-03-15\): 8 of 8 windows reach past it/);
    expect(state.runs.at(-1)).toMatchObject({ status: 'ok', summary: { warning: r.warning, serviceTime: '2026-01-01T00:00:00Z' } });
  });
});

describe('ingestEvents', () => {
  it('loads closed journal segments and records a run that loaded some', async () => {
    const { acts, state } = createFakes();
    const r = await ingestEvents({}, acts);
    expect(r.events).toBe(40);
    expect(state.runs).toHaveLength(1);
    expect(state.runs[0]).toMatchObject({ workflow: 'ingestEvents', status: 'ok', summary: { segments: 2 } });
  });

  it('runs the publish step after every ingest, also one that found nothing (the step publishes only when the snapshot is behind)', async () => {
    // Before issue #10 an ingest that found nothing skipped it: a run killed between its commit and its
    // publish then left the snapshot stale for good.
    const { acts, state } = createFakes();
    await ingestEvents({}, acts);
    expect(state.calls.filter((c) => c.name === 'publishSnapshot')).toHaveLength(1);
    const idle = createFakes();
    idle.acts.ingestEvents = async () => ({ segments: 0, events: 0, duplicates: 0, quarantined: 0, failed: 0 });
    await ingestEvents({}, idle.acts);
    expect(idle.state.calls.map((c) => c.name)).toEqual(['publishSnapshot']);
  });

  it('does not record a run that found nothing to load', async () => {
    const { acts, state } = createFakes();
    acts.ingestEvents = async () => ({ segments: 0, events: 0, duplicates: 0, quarantined: 0, failed: 0 });
    await ingestEvents({}, acts);
    expect(state.runs).toHaveLength(0);
  });

  it('records a run in which a segment could not be loaded', async () => {
    const { acts, state } = createFakes();
    acts.ingestEvents = async () => ({ segments: 0, events: 0, duplicates: 0, quarantined: 0, failed: 1 });
    await ingestEvents({}, acts);
    expect(state.runs).toMatchObject([{ workflow: 'ingestEvents', status: 'ok', summary: { failed: 1 } }]);
  });
});
