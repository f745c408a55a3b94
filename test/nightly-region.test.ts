// The nightly says when MIDs have no region of their own (issue #13): the computeRatios activity counts the
// MIDs judged under the default region, the run summary carries the note, and `cbp run nightly` prints it.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createAlertActivities } from '../activities/alerts.ts';
import type { ActivityContext } from '../activities/deps.ts';
import { humanNightly } from '../cli/pipeline.ts';
import { loadConfig } from '../lib/config.ts';
import { loadRules } from '../rules/thresholds.ts';
import type { NightlyResult } from '../workflows/nightly.ts';
import type { Store } from '../store/db.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

let store: Store | undefined;
let dir: string | undefined;
afterAll(() => cleanup(store, dir));

function context(s: Store, d: string, rules: ReturnType<typeof loadRules>): ActivityContext {
  const config = loadConfig({ env: { CBP_DATA_DIR: d }, cwd: d });
  return {
    deps: { config, store: s, clients: {} as ActivityContext['clients'], rules, notifiers: [] },
    config, clients: {} as ActivityContext['clients'], now: () => new Date('2026-02-05T03:00:00Z'),
    dataDir: d, journalDir: path.join(d, 'journal'), snapshotPath: path.join(d, 'snap.duckdb'),
    withStore: (_name, fn) => fn(s),
  };
}

describe('the nightly and MIDs without a region of their own', () => {
  it('counts them in computeRatios and says so in the summary cbp run nightly prints', async () => {
    const t = await tempStore();
    store = t.store;
    dir = t.dir;
    await insertStats(t.store, [
      { mid: 'm1', network: 'visa', month: '2026-01', cb: 10, tx: 20_000 },
      { mid: 'm2', network: 'visa', month: '2026-01', cb: 10, tx: 20_000 },
      { mid: 'm3', network: 'mastercard', month: '2026-01', cb: 10, tx: 20_000 },
    ]);
    const file = path.join(t.dir, 'thresholds.yaml');
    fs.writeFileSync(file, 'mids:\n  m1: { region: CEMEA }\n');
    const acts = createAlertActivities(context(t.store, t.dir, loadRules(file, { defaultRegion: 'EU' })));
    // The worker lives on: what DuckDB cached for the evaluation is given back after it.
    const release = vi.spyOn(t.store, 'releaseMemory');
    const r = await acts.computeRatios({ asOf: '2026-02-05', notify: false });
    // (evaluateAlerts itself gives back only what the allocator holds; the activity everything, once, last)
    expect(release.mock.calls.map((c) => c[0] ?? 'all')).toEqual(['allocator', 'all']);
    release.mockRestore();
    const note = '2 MIDs have no region of their own and were evaluated as EU (CBP_DEFAULT_REGION; or set mids.<mid>.region in the thresholds file)';
    expect(r.noRegion).toEqual({ mids: 2, region: 'EU', note });

    const everyRegion = createAlertActivities(context(t.store, t.dir, loadRules(undefined, {})));
    fs.writeFileSync(file, 'mids:\n  m1: { region: CEMEA }\n  m2: { region: US }\n  m3: { region: EU }\n');
    const all = await createAlertActivities(context(t.store, t.dir, loadRules(file))).computeRatios({ asOf: '2026-02-05', notify: false });
    expect(all.noRegion).toBeUndefined();
    expect((await everyRegion.computeRatios({ asOf: '2026-02-05', notify: false })).noRegion?.note).toBe(
      '3 MIDs have no region of their own and were evaluated as US (the built-in default; set CBP_DEFAULT_REGION, or set mids.<mid>.region in the thresholds file)',
    );

    const result = {
      runId: 'nightly-1', asOf: '2026-02-05T03:00:00Z', windows: [], serviceTime: null,
      events: { events: 0, duplicates: 0, quarantined: 0, failed: 0, segments: 0 },
      enrich: { lookups: 0, failed: 0 },
      ratios: r, notices: { sent: 0, failed: 0, notifiers: ['webhook'] }, snapshot: { path: '/x.duckdb' },
    } as unknown as NightlyResult;
    expect(humanNightly(result).split('\n').at(-1)).toBe(`NOTE: ${note}; cbp ratios shows each MID's region`);
  });
});
