// The real activities as the Temporal worker runs them: every activity of the interface implemented, the
// store opened once per worker process on first use (sharedStore), fetchAndLoad heartbeating inside an
// activity context, and service refusals reaching Temporal as non-retryable failures typed by their code.
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, sharedStore, storeOpener } from '../activities/index.ts';
import { ACTIVITY_NAMES, type FetchAndLoadInput, type FetchAndLoadResult } from '../activities/types.ts';
import { createServiceClients, type ServiceClients } from '../client/index.ts';
import { loadConfig, type Config } from '../lib/config.ts';
import type { RunningSandbox } from '../sandbox/index.ts';
import { temporalActivities } from '../worker/activity-errors.ts';
import { configFor, FAST_RETRY, rmrf, sandbox, tempDir } from './activities-fixtures.ts';

let sb: RunningSandbox;
let dir: string;
let cfg: Config;
let clients: ServiceClients;
const shared = { current: undefined as ReturnType<typeof sharedStore> | undefined };

beforeAll(async () => {
  sb = await sandbox();
  dir = tempDir();
  cfg = configFor(sb, dir);
  clients = createServiceClients(cfg, FAST_RETRY);
});
afterAll(async () => {
  shared.current?.close();
  await clients?.close();
  await sb?.close();
  rmrf(dir);
});

describe('the activities under the Temporal worker', () => {
  it('implements every activity the workflows call', () => {
    const acts = createActivities({ config: cfg, store: async () => { throw new Error('not opened'); }, clients });
    for (const name of ACTIVITY_NAMES) expect(typeof acts[name]).toBe('function');
  });

  it('opens the store once per process on first use, and fetchAndLoad heartbeats while it downloads and loads', async () => {
    let opened = 0;
    const open = storeOpener(cfg);
    shared.current = sharedStore(async () => {
      opened++;
      return open();
    });
    const acts = temporalActivities(createActivities({ config: cfg, store: shared.current.get, clients }));
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const window = { from: '2025-12-01', to: '2025-12-15' };
    const fetch = (input: FetchAndLoadInput): Promise<FetchAndLoadResult> => env.run(acts.fetchAndLoad, input);
    const [a, b] = await Promise.all([fetch({ kind: 'chargebacks', window, runId: 'r1' }), fetch({ kind: 'prevention', window, runId: 'r1' })]);
    expect(a).toMatchObject({ kind: 'chargebacks', windowId: '2025-12-01..2025-12-15', quarantined: 0 });
    expect(a.records).toBeGreaterThan(0);
    expect(a.landingFile).toMatch(/^landing\/chargebacks\//);
    expect(b.kind).toBe('prevention');
    expect(beats.length).toBeGreaterThan(0);
    expect(opened).toBe(1);
    // Idempotent: the same window again leaves one copy of each record.
    const store = await shared.current.get();
    const [{ n: before }] = await store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM chargebacks');
    await fetch({ kind: 'chargebacks', window, runId: 'r2' });
    const [{ n: after }] = await store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM chargebacks');
    expect(after).toBe(before);
    expect(after).toBe(a.records);
  });

  it('turns a refused credential into a non-retryable failure typed by its code, and a missing setting too', async () => {
    const wrong = loadConfig({ env: { ...envOf(cfg), CBP_REPORTING_KEY: 'not-the-key' } });
    const badClients = createServiceClients(wrong, FAST_RETRY);
    try {
      const acts = temporalActivities(createActivities({ config: wrong, store: async () => { throw new Error('unused'); }, clients: badClients }));
      // Quiet: the failures are expected here.
      const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
      const env = new MockActivityEnvironment(undefined, { logger: silent });
      const input: FetchAndLoadInput = { kind: 'chargebacks', window: { from: '2025-12-01', to: '2025-12-02' }, runId: 'r' };
      const err = await env.run(acts.fetchAndLoad, input).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err).toMatchObject({ type: 'CBP_ERR_SERVICE_UNAUTHORIZED', nonRetryable: true });
      expect(String((err as Error).message)).not.toContain('not-the-key');

      const none = createServiceClients(loadConfig({ env: {} }));
      const acts2 = temporalActivities(createActivities({ config: loadConfig({ env: {} }), store: async () => { throw new Error('unused'); }, clients: none }));
      const err2 = await env.run(acts2.listSubscriptions).catch((e: unknown) => e);
      expect(err2).toMatchObject({ type: 'CBP_ERR_CONFIG', nonRetryable: true });
      await none.close();
    } finally {
      await badClients.close();
    }
  });
});

function envOf(c: Config): Record<string, string> {
  return {
    CBP_REPORTING_BASE_URL: c.reportingBaseUrl as string,
    CBP_COMPANY_TOKEN: c.companyToken as string,
    CBP_DATA_DIR: c.dataDir,
    CBP_DB_PATH: c.dbPath,
  };
}
