// A report of several hundred MB goes to disk, and is read back, while the process's memory stays flat.
// Its own file, so it runs in its own worker process and the RSS figures are its own.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReportingClient } from '../client/reporting.ts';
import { readReportRecords } from '../client/report-records.ts';
import { createLogger } from '../lib/log.ts';
import { startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

const MB = 1024 * 1024;
// CBP_LARGE_REPORT_MB makes the report larger, to check that memory does not grow with size.
const TARGET_BYTES = Number(process.env.CBP_LARGE_REPORT_MB ?? 300) * MB;
const RECORDS_PER_CHUNK = 1000;

let srv: ScriptedServer;
let dir: string;

function record(i: number): string {
  return JSON.stringify({
    case_number: `C-${i}`,
    status: 'New',
    mid: `M${i % 50}`,
    card_number: '555555******4444',
    card_type: 'mastercard',
    amount: ((i % 10_000) / 100).toFixed(2),
    currency: 'USD',
    reason_code: '4853',
    reason: 'Cardholder Dispute - Not as Described',
    date_received: '2026-11-01 10:00:00',
    transaction_date: '2026-10-20',
    order_id: `INV-${i}`,
  });
}

/**
 * Writes a JSON array of about TARGET_BYTES, waiting for 'drain'. One block of records is built once and
 * sent again and again, so the server side makes no garbage and the RSS figures are the client's.
 */
async function streamLargeReport(res: ServerResponse): Promise<number> {
  res.writeHead(200, { 'content-type': 'application/json' });
  const block = Buffer.from(Array.from({ length: RECORDS_PER_CHUNK }, (_, i) => record(i)).join(','));
  const comma = Buffer.from(',');
  let written = 0;
  let n = 0;
  const write = (b: Buffer) =>
    new Promise<void>((resolve, reject) => {
      written += b.length;
      if (res.write(b)) return resolve();
      const done = (e?: Error) => {
        res.off('drain', done);
        res.off('error', done);
        if (e) reject(e);
        else resolve();
      };
      res.on('drain', done);
      res.on('error', done);
    });
  await write(Buffer.from('['));
  for (let chunk = 0; written < TARGET_BYTES && chunk < 1_000_000; chunk++) {
    if (chunk > 0) await write(comma);
    await write(block);
    n += RECORDS_PER_CHUNK;
  }
  await write(Buffer.from(']'));
  res.end();
  return n;
}

/** Samples RSS until stopped; returns the peak growth over the baseline taken at start. */
function rssMonitor() {
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 10);
  return {
    stop(): number {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return peak - base;
    },
  };
}

let recordsSent = 0;

beforeAll(async () => {
  srv = await startScriptedServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
  srv.script('POST', '/chargebacks', async (_req, res) => {
    recordsSent = await streamLargeReport(res);
  });
});
afterAll(async () => {
  await srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a large report', () => {
  const dest = () => path.join(dir, 'large.json');

  it('is streamed to disk while memory stays flat', async () => {
    const rc = createReportingClient(
      { reportingBaseUrl: srv.url, reportingKey: 'large-report-key', companyToken: 'large-company-token' },
      { logger: createLogger({ level: 'silent' }), retry: { retries: 0 } },
    );
    const mon = rssMonitor();
    const got = await rc.fetchReport({ kind: 'chargebacks', start: '2026-01-01T00:00:00Z', end: '2026-11-30T23:59:59Z', dest: dest() });
    const growth = mon.stop();
    await rc.close();
    console.log(`downloaded ${(got.bytes / MB).toFixed(0)} MB; RSS growth during the download ${(growth / MB).toFixed(1)} MB`);
    expect(got.bytes).toBeGreaterThanOrEqual(TARGET_BYTES);
    expect(fs.statSync(dest()).size).toBe(got.bytes);
    expect(got.empty).toBe(false);
    expect(growth).toBeLessThan(100 * MB);
  });

  it('is read back record by record while memory stays flat', async () => {
    const mon = rssMonitor();
    let count = 0;
    let last: Record<string, unknown> | undefined;
    for await (const r of readReportRecords(dest(), 'chargebacks', 'JSON')) {
      count++;
      last = r;
    }
    const growth = mon.stop();
    console.log(`read ${count} records; RSS growth while reading ${(growth / MB).toFixed(1)} MB`);
    expect(count).toBe(recordsSent);
    expect(last?.case_number).toBe(`C-${RECORDS_PER_CHUNK - 1}`);
    expect(growth).toBeLessThan(100 * MB);
  });
});
