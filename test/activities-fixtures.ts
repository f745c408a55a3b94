// Shared by the activities / runner tests: a sandbox on port 0, a temp data dir, a Config pointing the real
// clients at the sandbox (built from an env object: process.env is never touched), and table dumps.
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Activities } from '../activities/types.ts';
import { demoConfig } from '../cli/commands/demo.ts';
import { openPipeline, type Pipeline, type PipelineOptions } from '../cli/pipeline.ts';
import type { Config } from '../lib/config.ts';
import { startSandbox, type RunningSandbox, type SandboxOptions } from '../sandbox/index.ts';
import type { Store } from '../store/db.ts';
import { configuredStore } from '../store/lake.ts';
import { seedStore } from './helpers/store-template.ts';
import { startReceiver, type RunningReceiver } from '../webhook/index.ts';

import { tempDir } from './helpers/tmp.ts';
import { cbpEntry, cbpHere, cleanEnv, runsHere } from './helpers/cbp-cli.ts';

export { tempDir };

export async function sandbox(opts: SandboxOptions = {}): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...opts });
}

export const WEBHOOK = { username: 'cbp-test', password: 'test-password-123', url: 'http://127.0.0.1:9/events' };

export function configFor(sb: RunningSandbox, dir: string, webhook: { username: string; password: string; url: string } = WEBHOOK): Config {
  return demoConfig(sb, dir, webhook);
}

/** Retries without waiting: the sandbox's faults are retried at once. */
export const FAST_RETRY: PipelineOptions['clientOptions'] = { retry: { retries: 8, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 5 } };

/** The pipeline of cfg; a new store file is seeded from the run's template (test/helpers/store-template.ts). */
export async function pipelineFor(cfg: Config, opts: PipelineOptions = {}): Promise<Pipeline> {
  const store = configuredStore(cfg);
  if (!store.lake && !fs.existsSync(store.dbPath)) await seedStore(store.dbPath);
  return openPipeline(cfg, { clientOptions: FAST_RETRY, ...opts });
}

/** A sandbox, a real webhook receiver with the given Basic credentials, and a pipeline pointed at both. */
export interface WithReceiver {
  sb: RunningSandbox;
  receiver: RunningReceiver;
  p: Pipeline;
  dir: string;
  close(): Promise<void>;
}

export async function startWithReceiver(auth: { username: string; password: string }): Promise<WithReceiver> {
  const dir = tempDir();
  const sb = await sandbox();
  const receiver = await startReceiver({ ...auth, journalDir: path.join(dir, 'journal'), port: 0 });
  const p = await pipelineFor(configFor(sb, dir, { ...auth, url: receiver.url }));
  return {
    sb, receiver, p, dir,
    async close() {
      await p.close();
      await receiver.close();
      await sb.close();
      rmrf(dir);
    },
  };
}

export async function admin<T = unknown>(sb: RunningSandbox, method: 'GET' | 'POST' | 'DELETE', route: string, body?: unknown): Promise<T> {
  const res = await fetch(`${sb.admin}${route}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`sandbox admin ${method} ${route}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A crash: fetchAndLoad throws after `n` successful windows (as a killed process would stop). */
export function crashAfter(n: number): (a: Activities) => Activities {
  let done = 0;
  return (a) => ({
    ...a,
    async fetchAndLoad(input) {
      if (done >= n) throw new Error(`simulated crash after ${n} windows`);
      const r = await a.fetchAndLoad(input);
      done++;
      return r;
    },
  });
}

/** Report tables, as sorted JSON lines, without the columns that record when or from which file a row was seen. */
export const REPORT_TABLES = ['chargebacks', 'chargeback_status_history', 'prevention_alerts', 'prevention_status_history', 'mid_stats', 'mids', 'quarantine'];
const VOLATILE = /(_seen_at|^seen_at$|loaded_at|landing_file|^sha256$|fetched_at)/;

export async function dumpTables(store: Store, tables = REPORT_TABLES): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of tables) {
    const rows = await store.all<Record<string, unknown>>(`SELECT * FROM ${t}`);
    out[t] = rows.map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).filter(([k]) => !VOLATILE.test(k))))).sort();
  }
  return out;
}

export function rmrf(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs `cbp ...args` from the repo root with only the given cbp / Temporal settings in its environment (test/helpers/cbp-cli.ts: in this process but for servers). */
export function cbp(args: string[], env: Record<string, string> = {}, cwd = ROOT, killAfterMs = 170_000): Promise<CliRun> {
  return runsHere(args) ? cbpHere(args, cwd, { ...cleanEnv(), ...env }) : cbpProcess(args, env, cwd, killAfterMs);
}

/** cbp() always as a child process: for what a process of its own changes (a store another process holds, its pid). */
export function cbpProcess(args: string[], env: Record<string, string> = {}, cwd = ROOT, killAfterMs = 170_000): Promise<CliRun> {
  const base = cleanEnv();
  return new Promise((resolve, reject) => {
    // The kill timer only stops a hung child from hanging the suite; no assertion depends on time.
    const child = spawn(process.execPath, [cbpEntry(), ...args], { cwd, env: { ...base, ...env }, timeout: killAfterMs });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
