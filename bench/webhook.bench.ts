// Durable events/s of the receiver against the same fastify server answering 200 without writing (same auth,
// same parsing), measured side by side in one run: autocannon on loopback, 50 connections, 10 s each
// (two alternating 5 s rounds per side).
// Each server runs in its own child process so autocannon does not share its CPU with the event loop it measures.
// Target: durable / baseline >= 0.5 (group commit makes one fdatasync serve a whole batch).
//
//   npm run bench -- webhook           (BENCH_SECONDS=5 for a shorter run)
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { buildReceiver, type EventSink } from '../webhook/server.ts';
import { startReceiver } from '../webhook/start.ts';

const USER = 'bench';
const PASS = 'bench-hook-password';
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 50;

const body = JSON.stringify({
  event_guid: 'evt_540385dce935441baca73ae04d319c35',
  event_timestamp: '2026-11-01T10:15:42Z',
  event_type: 'chargeback.new',
  alternate_transaction_id: 'alt-98765',
  amount: 94.76,
  arn: '74567890123456789012345',
  auth_code: '0A1B2C',
  card_brand: 'visa',
  card_first_6: '411111',
  card_last_4: '1111',
  case_number: 'CB-2026-000123',
  chargeback_date: '2026-10-30',
  chargeback_guid: 'chb_0d6a2f3e9c8b4a7d9e1f2a3b4c5d6e7f',
  currency: 'USD',
  date_received: '2026-10-31',
  due_date: '2026-11-20',
  mid: 'MID-0001',
  processor_transaction_date: '2026-10-01 08:12:00',
  processor_transaction_id: 'txn_1234567890',
  reason_code: '10.4',
  reason_description: 'Other Fraud - Card Absent Environment',
});

/** Child mode: serve one kind of receiver, print its url, print peak RSS on SIGTERM. */
async function serve(kind: 'durable' | 'baseline'): Promise<void> {
  let close: () => Promise<void>;
  let url: string;
  if (kind === 'durable') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-'));
    const rx = await startReceiver({ username: USER, password: PASS, journalDir: dir, port: 0 });
    url = rx.url;
    close = async () => {
      await rx.close();
      fs.rmSync(dir, { recursive: true, force: true });
    };
  } else {
    const discard: EventSink = { append: async () => {}, status: () => ({ discarding: true }), healthy: true };
    const app = buildReceiver({ username: USER, password: PASS, sink: discard });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address() as { port: number };
    url = `http://127.0.0.1:${addr.port}/events`;
    close = () => app.close();
  }
  process.stdout.write(JSON.stringify({ url }) + '\n');
  process.once('SIGTERM', () => {
    void close().then(() => {
      process.stdout.write(JSON.stringify({ maxRssMiB: Math.round(process.resourceUsage().maxRSS / 1024) }) + '\n');
      process.exit(0);
    });
  });
}

function startServer(kind: string): Promise<{ child: ChildProcess; url: string; rss: Promise<number> }> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, ['--import', 'tsx', self, '--serve', kind], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let resolved = false;
    let rssResolve: (n: number) => void = () => {};
    const rss = new Promise<number>((r) => (rssResolve = r));
    child.stdout!.on('data', (d) => {
      out += d;
      const lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { url?: string; maxRssMiB?: number });
      if (!resolved && lines[0]?.url) {
        resolved = true;
        resolve({ child, url: lines[0].url, rss });
      }
      const r = lines.find((l) => l.maxRssMiB !== undefined);
      if (r) rssResolve(r.maxRssMiB!);
    });
    child.on('exit', (code) => {
      if (!resolved) reject(new Error(`${kind} server exited (${code})`));
      rssResolve(NaN);
    });
  });
}

interface Tally {
  kind: string;
  ok: number;
  other: number;
  seconds: number;
  p50: number[];
  p99: number[];
}

async function round(url: string, seconds: number, t: Tally): Promise<void> {
  const result = await autocannon({
    url,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: { authorization: `Basic ${Buffer.from(`${USER}:${PASS}`).toString('base64')}`, 'content-type': 'application/json' },
    body,
  });
  t.ok += result['2xx'];
  t.other += result.non2xx + result.errors + result.timeouts;
  t.seconds += seconds;
  t.p50.push(result.latency.p50);
  t.p99.push(result.latency.p99);
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--serve');
  if (i >= 0) return serve(process.argv[i + 1] as 'durable' | 'baseline');
  // Alternating short rounds, so a burst of load from elsewhere on the machine hits both sides alike.
  const ROUNDS = 2;
  const per = SECONDS / ROUNDS;
  console.log(`receiver benchmark: ${CONNECTIONS} connections, ${SECONDS} s each (${ROUNDS} alternating rounds), loopback, ${body.length}-byte chargeback.new body`);
  const servers = { baseline: await startServer('baseline'), durable: await startServer('durable') };
  const tallies: Record<'baseline' | 'durable', Tally> = {
    baseline: { kind: 'baseline', ok: 0, other: 0, seconds: 0, p50: [], p99: [] },
    durable: { kind: 'durable', ok: 0, other: 0, seconds: 0, p50: [], p99: [] },
  };
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of ['baseline', 'durable'] as const) await round(servers[k].url, per, tallies[k]);
  }
  for (const k of ['baseline', 'durable'] as const) servers[k].child.kill('SIGTERM');
  const rss = { baseline: await servers.baseline.rss, durable: await servers.durable.rss };
  const rate = (t: Tally) => t.ok / t.seconds;
  for (const k of ['baseline', 'durable'] as const) {
    const t = tallies[k];
    console.log(
      `${k.padEnd(9)} ${rate(t).toFixed(0).padStart(7)} events/s answered 200 (${t.ok} in ${t.seconds} s, ${t.other} other)  ` +
        `p50 ${Math.max(...t.p50)} ms  p99 ${Math.max(...t.p99)} ms (worst round)  server peak RSS ${rss[k]} MiB`,
    );
  }
  const ratio = rate(tallies.durable) / rate(tallies.baseline);
  console.log(`durable / baseline = ${ratio.toFixed(2)} (target >= 0.5)${ratio >= 0.5 ? '' : '  BELOW TARGET'}`);
  console.log(`bench process peak RSS ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`);
}

await main();
