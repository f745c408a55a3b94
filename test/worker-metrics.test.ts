// The worker's own metrics without a server: per activity its runs, failures (by error code) and durations, and
// the pipeline gauges read from the store the worker holds (last successful run, quarantine, snapshot lag).
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkerMetrics } from '../worker/metrics.ts';
import { temporalActivities } from '../worker/activity-errors.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { recordRun } from '../store/runs.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { bumpGeneration } from '../store/generation.ts';
import { CbpError } from '../lib/errors.ts';
import { tempDir } from './helpers/tmp.ts';

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

describe('worker metrics', () => {
  it('counts activity runs, failures by error code and durations', async () => {
    const m = createWorkerMetrics({ store: () => undefined, snapshotPath: path.join(tempDir(), 'none.duckdb') });
    const acts = temporalActivities(
      {
        async ok() {
          return 1;
        },
        async broken() {
          throw new CbpError('CBP_ERR_ACTIVITY_STORE', 'disk full');
        },
      },
      { heartbeatMs: 60_000, observe: m.observe },
    );
    await acts.ok();
    await acts.ok();
    await expect(acts.broken()).rejects.toThrow(/disk full/);
    const text = await m.source.render();
    expect(sample(text, 'cbp_activity_runs_total{activity="ok"}')).toBe(2);
    expect(sample(text, 'cbp_activity_runs_total{activity="broken"}')).toBe(1);
    expect(sample(text, 'cbp_activity_failures_total{activity="broken",code="CBP_ERR_ACTIVITY_STORE"}')).toBe(1);
    expect(text).not.toMatch(/cbp_activity_failures_total\{activity="ok"/);
    expect(sample(text, 'cbp_activity_duration_seconds_count{activity="ok"}')).toBe(2);
    // No store opened yet: the unlabelled pipeline gauges say "unknown", not 0.
    expect(text).toMatch(/^cbp_rejected_orders Nan$/m);
  });

  it("reads the pipeline gauges from the worker's store after an activity", async () => {
    const dir = tempDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    stores.push(store);
    const snapshotPath = path.join(dir, 'published', 'cbp.duckdb');
    const m = createWorkerMetrics({ store: () => store, snapshotPath });
    await recordRun(store, { runId: 'n1', workflow: 'nightly', status: 'ok', startedAt: '2026-11-01T02:30:00Z', finishedAt: '2026-11-01T02:40:00Z', summary: {} });
    await recordRun(store, { runId: 'n2', workflow: 'nightly', status: 'failed', startedAt: '2026-11-02T02:30:00Z', finishedAt: '2026-11-02T02:35:00Z', summary: {}, error: 'x' });
    await m.refreshPipeline();
    let text = await m.source.render();
    expect(sample(text, 'cbp_last_success_timestamp_seconds{workflow="nightly"}')).toBe(Date.parse('2026-11-01T02:40:00Z') / 1000);
    expect(sample(text, 'cbp_rejected_orders')).toBe(0);
    expect(sample(text, 'cbp_snapshot_published')).toBe(0);
    await publishSnapshot(store, { snapshotPath });
    await m.refreshPipeline();
    text = await m.source.render();
    expect(sample(text, 'cbp_snapshot_published')).toBe(1);
    expect(sample(text, 'cbp_snapshot_generations_behind')).toBe(0);
    expect(sample(text, 'cbp_pipeline_gauges_source{source="store"}')).toBe(1);
    // A run record does not raise the generation (store/runs.ts); a committed write does: the snapshot lags.
    await bumpGeneration(store);
    await recordRun(store, { runId: 'n3', workflow: 'nightly', status: 'ok', startedAt: '2026-11-03T02:30:00Z', finishedAt: '2026-11-03T02:40:00Z', summary: {} });
    await m.refreshPipeline();
    text = await m.source.render();
    expect(sample(text, 'cbp_snapshot_generations_behind')).toBe(1);
    expect(sample(text, 'cbp_last_success_timestamp_seconds{workflow="nightly"}')).toBe(Date.parse('2026-11-03T02:40:00Z') / 1000);
  });

  it('stop() waits for the read in flight and reads no more: the worker closes its store only then', async () => {
    const dir = tempDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    stores.push(store);
    let reads = 0;
    const counted = { ...store, exclusive: <T>(fn: (s: typeof store) => Promise<T>) => ((reads += 1), store.exclusive(fn)) };
    const m = createWorkerMetrics({ store: () => counted, snapshotPath: path.join(dir, 'none.duckdb') });
    const running = m.refreshPipeline();
    let settled = false;
    void running.then(() => (settled = true));
    await m.stop();
    expect(settled).toBe(true);
    await m.refreshPipeline();
    expect(reads).toBe(1);
  });
});
