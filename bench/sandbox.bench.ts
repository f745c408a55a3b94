// Sandbox data at volume: generate a world with 100,000 chargebacks in one month, then render that month's
// chargebacks report as JSON and as CSV through renderReport into a counting sink, and (when the sandbox
// server is there) through the real HTTP server, streamed with undici and thrown away. Prints records/s per
// path side by side and the process's peak RSS; nothing here is a pass/fail limit.
import { request } from 'undici';
import { generateWorld } from '../sandbox/generate.ts';
import { type ReportQuery, renderReport } from '../sandbox/reports.ts';
import type { ScenarioInput } from '../sandbox/scenario.ts';

const CHARGEBACKS = Number(process.env.BENCH_CHARGEBACKS ?? 100_000);
const START = '2026-11-01T00:00:00Z';
const scenario: ScenarioInput = {
  name: 'bench',
  history_months: 1,
  horizon_months: 0,
  orders: 0,
  order_share: 0,
  mids: [
    {
      mid: 'BENCH-1',
      monthly_transactions: 1000,
      months: {
        '2026-10': {
          visa: { transactions: 4_000_000, chargebacks: Math.ceil(CHARGEBACKS / 2), tc40: 0, ethoca: 0, verifi: 0, rdr: 0, order_validations: 0 },
          mastercard: { transactions: 3_000_000, chargebacks: Math.floor(CHARGEBACKS / 2), ethoca: 0, verifi: 0, order_validations: 0 },
        },
        // Mastercard's chargebacks follow the previous month's transactions: keep November's few.
        '2026-11': { mastercard: { chargebacks: 10 } },
      },
    },
  ],
};

const rss = () => Math.round(process.resourceUsage().maxRSS / 1024);
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

let t0 = process.hrtime.bigint();
const world = generateWorld({ seed: 1, start: START, scenario });
const genMs = ms(t0);
const query: ReportQuery = { kind: 'chargebacks', start: '2026-10-01 00:00:00', end: '2026-10-31 23:59:59', now: START };
const inRange = world.chargebacks.filter((c) => c.received_at.startsWith('2026-10')).length;
console.log(`generated ${world.chargebacks.length} chargebacks (${inRange} in the report's month) in ${genMs.toFixed(0)} ms; peak RSS ${rss()} MiB`);

async function direct(format: 'JSON' | 'CSV'): Promise<{ ms: number; bytes: number; chunks: number; largest: number }> {
  const t = process.hrtime.bigint();
  let bytes = 0;
  let chunks = 0;
  let largest = 0;
  for await (const c of renderReport(world, query, format)) {
    bytes += Buffer.byteLength(c);
    chunks++;
    largest = Math.max(largest, c.length);
  }
  return { ms: ms(t), bytes, chunks, largest };
}

const rows: Array<[string, number, number]> = [];
for (const format of ['JSON', 'CSV'] as const) {
  await direct(format); // warm-up
  const r = await direct(format);
  rows.push([`renderReport ${format}`, r.ms, r.bytes]);
  console.log(`renderReport ${format}: ${inRange} records in ${r.ms.toFixed(0)} ms = ${Math.round(inRange / (r.ms / 1000))} records/s, ${(r.bytes / 1e6).toFixed(1)} MB in ${r.chunks} chunks (largest ${(r.largest / 1024).toFixed(0)} KiB)`);
}

// Through the real server when it exists (sandbox/server.ts is written beside this file by another engineer).
let startSandbox: ((o: Record<string, unknown>) => Promise<any>) | undefined;
try {
  ({ startSandbox } = (await import('../sandbox/server.ts')) as any);
} catch (e) {
  console.log(`HTTP: skipped, sandbox/server.ts did not load (${(e as Error).message.split('\n')[0]})`);
}
if (startSandbox) {
  const sb = await startSandbox({ world, start: START, logger: false });
  try {
    for (const format of ['JSON', 'CSV'] as const) {
      const once = async () => {
        const t = process.hrtime.bigint();
        const res = await request(`${sb.baseUrls.reporting}/chargebacks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${sb.credentials.reportingKey}` },
          body: JSON.stringify({ start_date: query.start, end_date: query.end, company_token: sb.credentials.companyToken, output_format: format }),
        });
        let bytes = 0;
        for await (const c of res.body) bytes += (c as Buffer).length; // to /dev/null
        if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`);
        return { ms: ms(t), bytes };
      };
      await once();
      const r = await once();
      rows.push([`HTTP ${format}`, r.ms, r.bytes]);
      console.log(`HTTP ${format}: ${inRange} records in ${r.ms.toFixed(0)} ms = ${Math.round(inRange / (r.ms / 1000))} records/s, ${(r.bytes / 1e6).toFixed(1)} MB`);
    }
  } finally {
    await sb.close();
  }
}

const base = rows[0][1];
console.log('\nside by side (time relative to renderReport JSON):');
for (const [name, t] of rows) console.log(`  ${name.padEnd(20)} ${(t / base).toFixed(2)}x  ${Math.round(inRange / (t / 1000))} records/s`);
t0 = process.hrtime.bigint();
console.log(`peak RSS ${rss()} MiB`);
