import { describe, expect, it } from 'vitest';
import type { Activities } from '../activities/types.ts';
import { createLocalRunner } from '../worker/local.ts';
import { callsOf, createFakes } from './workflows-fakes.ts';

describe('local runner', () => {
  it('runs the same bodies with the given clock: nightly without asOf covers up to now', async () => {
    const { acts, state } = createFakes();
    const { now: _ignored, ...activities } = acts;
    const runner = createLocalRunner(activities as Activities, { now: () => '2026-04-02T03:00:00Z' });
    const r = await runner.nightly({ windowDays: 5, lookbackDays: 5, kinds: ['prevention'] });
    expect(r.asOf).toBe('2026-04-02T03:00:00Z');
    expect(callsOf(state, 'fetchAndLoad')).toEqual([[{ kind: 'prevention', window: { from: '2026-03-29', to: '2026-04-02' }, runId: 'nightly-2026-04-02T03:00:00Z' }]]);
  });

  it('follows a backfill through its continued runs to the end', async () => {
    const { acts, state } = createFakes();
    const runner = createLocalRunner(acts);
    const r = await runner.backfill({ from: '2026-01-01', to: '2026-01-20', kinds: ['chargebacks'], windowDays: 2, windowsPerRun: 3 });
    expect(r).toMatchObject({ status: 'done', planned: 10, loaded: 10 });
    expect(callsOf(state, 'fetchAndLoad')).toHaveLength(10);
    expect(state.runs).toHaveLength(1);
  });
});
