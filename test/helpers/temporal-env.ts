// What the real-server test files share: whether a Temporal server can be had here (TEMPORAL_ADDRESS, or a
// `temporal` CLI on PATH or from `npm run temporal:install`, whose dev server is started), the suite's title
// that says which (or why it is skipped), the environment's start-up, and one workflow bundle per run.
// TestWorkflowEnvironment.createLocal() is only called with an existing binary: without one it would download
// a server, which these machines cannot.
import fs from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll } from 'vitest';
import { bundleWorkflowCode, DefaultLogger, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import { msToTs } from '@temporalio/common/lib/time.js';
import { HOW_TO_GET_TEMPORAL, findTemporalCli } from '../../lib/temporal-cli.ts';
import { WORKFLOWS_PATH } from '../../worker/worker.ts';
import { runCachePath } from './global-tmp.ts';

export const temporalAddress = process.env.TEMPORAL_ADDRESS;
export const temporalCli = temporalAddress ? undefined : findTemporalCli();
export const temporalAvailable = Boolean(temporalAddress || temporalCli);
/** CI sets CBP_REQUIRE_TEMPORAL=1 after `npm run temporal:install`: there a missing server is a failure, not a skip. */
export const temporalRequired = process.env.CBP_REQUIRE_TEMPORAL === '1';
/** describe.skipIf(skipTemporal): skipped only where there is no server and none is required. */
export const skipTemporal = !temporalAvailable && !temporalRequired;

/** The suite's title: which server, or why it is skipped (shown in the test output either way). */
export function temporalTitle(what: string): string {
  if (temporalAvailable) return `${what} (${temporalAddress ? `TEMPORAL_ADDRESS=${temporalAddress}` : `dev server of ${temporalCli}`})`;
  if (temporalRequired) return `${what} (CBP_REQUIRE_TEMPORAL=1, and none was found)`;
  return `${what} (skipped: no TEMPORAL_ADDRESS and no temporal CLI on PATH or in .tools/; npm run temporal:install)`;
}

/** Quiet the SDK's own INFO lines (worker state changes) unless a test file installed a runtime already. */
export function quietTemporalRuntime(): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'WARN' }), forward: {} } },
    });
  } catch {
    // already installed in this process
  }
}

/** The test environment: the existing server at TEMPORAL_ADDRESS, else a dev server of the local CLI. */
export async function startTemporalEnv(): Promise<TestWorkflowEnvironment> {
  if (!temporalAvailable) throw new Error(`CBP_REQUIRE_TEMPORAL=1 but there is no Temporal server to test against. ${HOW_TO_GET_TEMPORAL}`);
  if (temporalAddress) {
    return TestWorkflowEnvironment.createFromExistingServer({ address: temporalAddress, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
  }
  // The SDK's fixed wait for a dev server can run out on a machine busy with other test files: tried again.
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createLocal({ server: { executable: { type: 'existing-path', path: temporalCli! } } });
    } catch (e) {
      if (attempt >= 3 || !/did not start within/.test(String((e as Error).message))) throw e;
    }
  }
}

let bundle: Promise<{ code: string }> | undefined;

/** The newest change and total size of the folders the workflows import from: a watch run's edit makes a new bundle. */
function sourcesStamp(): string {
  let newest = 0;
  let size = 0;
  for (const dir of ['workflows', 'activities', 'contract', 'lib']) {
    const root = path.join(path.dirname(WORKFLOWS_PATH), '..', dir);
    for (const f of fs.readdirSync(root, { recursive: true })) {
      if (!String(f).endsWith('.ts')) continue;
      const st = fs.statSync(path.join(root, String(f)));
      newest = Math.max(newest, st.mtimeMs);
      size += st.size;
    }
  }
  return `${Math.round(newest)}-${size}`;
}

/**
 * workflows/temporal.ts bundled once per run (each worker would otherwise bundle at its start): kept in the run's
 * temp folder (test/helpers/global-tmp.ts, runCachePath) for the other test files; once per file outside such a run.
 */
export function workflowBundle(): Promise<{ code: string }> {
  bundle ??= (async () => {
    const file = runCachePath(`workflow-bundle-${sourcesStamp()}.js`);
    if (file && fs.existsSync(file)) return { code: fs.readFileSync(file, 'utf8') };
    const made = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
    if (file) {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(`${file}.${process.pid}`, made.code);
      fs.renameSync(`${file}.${process.pid}`, file);
    }
    return made;
  })();
  return bundle;
}

/** A describe block's server: started before its tests (quiet SDK logs), torn down after; read env() inside a test. */
export function useTemporalEnv(): () => TestWorkflowEnvironment {
  let env: TestWorkflowEnvironment | undefined;
  beforeAll(async () => {
    quietTemporalRuntime();
    env = await startTemporalEnv();
  }, 120_000);
  afterAll(async () => {
    await env?.teardown();
  });
  return () => env!;
}

/**
 * Times out a killed worker's pending activities in seconds, not the production minute: their heartbeat timeout and
 * first retry interval are shortened on the server (UpdateActivityOptions) until each is retried (attempt 2 scheduled
 * or started), then restored, so the retry heartbeats under the timeout the workflow set.
 */
export async function timeOutHeartbeats(env: TestWorkflowEnvironment, handle: WorkflowHandle, activityIds: string[], seconds = 2): Promise<void> {
  const namespace = env.namespace ?? 'default';
  const execution = { workflowId: handle.workflowId };
  const update = (id: string, restore: boolean) => env.client.workflowService.updateActivityOptions(restore
    ? { namespace, execution, id, restoreOriginal: true }
    : { namespace, execution, id, activityOptions: { heartbeatTimeout: msToTs(`${seconds}s`), retryPolicy: { initialInterval: msToTs('1s') } },
        updateMask: { paths: ['heartbeat_timeout', 'retry_policy.initial_interval'] } });
  for (const id of activityIds) await update(id, false);
  // Else the workflow's next task waits out the dead worker's sticky queue before any other worker takes it.
  await env.client.workflowService.resetStickyTaskQueue({ namespace, execution });
  for (const id of activityIds) {
    for (;;) {
      const a = ((await handle.describe()).raw.pendingActivities ?? []).find((p) => p.activityId === id);
      if (!a || (a.attempt ?? 1) >= 2) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    await update(id, true).catch(() => undefined); // done already: nothing to restore
  }
}
