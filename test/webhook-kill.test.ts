// Reliability under kill -9: every event that got a 200 must be in events_raw exactly once after a restart
// and an ingest, whatever moment the receiver was killed at. Events that got no answer may or may not be.
import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { openTestStore } from './helpers/store-template.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry } from './helpers/cbp-cli.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CBP = cbpEntry();
const USER = 'kill-test';
const PASS = 'kill-test-password';
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function env(dbPath: string): NodeJS.ProcessEnv {
  const snapshot = path.join(path.dirname(dbPath), 'published', 'cbp.duckdb');
  return { ...process.env, CBP_WEBHOOK_USERNAME: USER, CBP_WEBHOOK_PASSWORD: PASS, CBP_LOG_LEVEL: 'warn', CBP_DB_PATH: dbPath, CBP_SNAPSHOT_PATH: snapshot, CBP_CONFIG: '' };
}

/** Starts `cbp webhook --port 0 --json` and resolves with the url from its first stdout line. */
function startChild(journalDir: string, dbPath: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [CBP, 'webhook', '--port', '0', '--json', '--journal', journalDir], {
    cwd: ROOT,
    env: env(dbPath),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        const first = JSON.parse(out.slice(0, nl)) as { url: string; journal: string };
        expect(first.journal).toBe(journalDir);
        resolve({ child, url: first.url });
      }
    });
    child.on('exit', (code) => reject(new Error(`receiver exited (${code}) before its first line: ${stderr}`)));
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.on('exit', () => r()));
}

function runCli(args: string[], dbPath: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CBP, ...args], { cwd: ROOT, env: env(dbPath), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((r) => child.on('exit', (code) => r({ code, stdout, stderr })));
}

const event = (guid: string) =>
  JSON.stringify({
    event_guid: guid,
    event_timestamp: '2026-11-01T10:00:00Z',
    event_type: 'chargeback.new',
    chargeback_guid: `cb_${guid}`,
    case_number: `C-${guid}`,
    mid: 'MID-1',
    amount: 94.76,
    currency: 'USD',
    reason_code: '4837',
  });

/** Sends guids with `connections` in flight; returns the ones answered 200. Stops a worker at its first socket error. */
async function sendAll(url: string, guids: string[], connections: number, onAck?: (n: number) => void): Promise<Set<string>> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections, pipelining: 1 });
  const acked = new Set<string>();
  let next = 0;
  const worker = async () => {
    while (next < guids.length) {
      const guid = guids[next++];
      try {
        const r = await pool.request({
          method: 'POST',
          path: u.pathname,
          headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASS}`).toString('base64')}`, 'content-type': 'application/json' },
          body: event(guid),
        });
        await r.body.text();
        if (r.statusCode === 200) {
          acked.add(guid);
          onAck?.(acked.size);
        }
      } catch {
        return; // the receiver is gone
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  await pool.destroy();
  return acked;
}

describe('receiver killed with SIGKILL under load', () => {
  it('keeps every acknowledged event exactly once across a kill -9, a restart and an ingest', async () => {
    const base = tempDir();
    const journalDir = path.join(base, 'journal');
    const dbPath = path.join(base, 'cbp.duckdb');
    const first = await startChild(journalDir, dbPath);

    const guids = Array.from({ length: 3000 }, (_, i) => `ev_${String(i).padStart(5, '0')}`);
    let killed = false;
    const acked = await sendAll(first.url, guids, 32, (n) => {
      // Mid-load: requests are in flight on every connection when the signal lands.
      if (n >= 400 && !killed) {
        killed = true;
        first.child.kill('SIGKILL');
      }
    });
    await exited(first.child);
    expect(killed).toBe(true);
    expect(acked.size).toBeGreaterThanOrEqual(400);
    expect(acked.size).toBeLessThan(guids.length);
    // The killed receiver left its segment open and its lock behind.
    expect(fs.readdirSync(journalDir).some((n) => n.endsWith('.ndjson'))).toBe(true);

    // Its pid may belong to a live process by now (in a container it usually does): say so in its lock file.
    expect(fs.existsSync(path.join(journalDir, 'receiver.lock'))).toBe(true);
    fs.writeFileSync(path.join(journalDir, 'receiver.lock'), '1\n');
    // Restart on the same journal at once: the OS dropped the killed receiver's lock, the open segment is sealed.
    const second = await startChild(journalDir, dbPath);
    expect(fs.readdirSync(journalDir).filter((n) => n.endsWith('.ndjson'))).toEqual([]);
    // The service re-sends what got no 200, and may re-send some that did.
    const unanswered = guids.filter((g) => !acked.has(g)).slice(0, 200);
    const resent = [...acked].slice(0, 50);
    const acked2 = await sendAll(second.url, [...unanswered, ...resent], 16);
    expect(acked2.size).toBe(unanswered.length + resent.length);
    second.child.kill('SIGTERM');
    await exited(second.child);
    expect(second.child.exitCode).toBe(0);

    const ing = await runCli(['run', 'ingest', '--json', '--journal', journalDir], dbPath);
    expect(ing.code, ing.stderr).toBe(0);
    const result = JSON.parse(ing.stdout) as { loaded: number; failed: number };
    expect(result.failed).toBe(0);
    // The ingest published the analysts' snapshot, with the same events.
    const snap = await openTestStore({ dbPath: path.join(path.dirname(dbPath), 'published', 'cbp.duckdb'), readOnly: true, migrate: false });
    try {
      const [{ n }] = await snap.all<{ n: number | string }>('SELECT count(*) AS n FROM events_raw');
      expect(Number(n)).toBe(result.loaded);
    } finally {
      snap.close();
    }

    const store = await openTestStore({ dbPath });
    try {
      const rows = await store.all<{ event_guid: string }>('SELECT event_guid FROM events_raw');
      const stored = rows.map((r) => r.event_guid);
      expect(new Set(stored).size).toBe(stored.length);
      const storedSet = new Set(stored);
      const missing = [...acked, ...acked2].filter((g) => !storedSet.has(g));
      expect(missing).toEqual([]);
      expect(stored.every((g) => guids.includes(g))).toBe(true);
      expect(result.loaded).toBe(stored.length);
    } finally {
      store.close();
    }
  });
});
