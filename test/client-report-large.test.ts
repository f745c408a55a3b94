// A report of several hundred MB goes to disk, and is read back, while the process's memory stays flat. The client
// runs in a child process (test/helpers/large-report-child.ts), so the RSS figures are its own.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServerResponse } from 'node:http';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CHILD = path.join(ROOT, 'test', 'helpers', 'large-report-child.ts');
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
  it('is streamed to disk, and read back record by record, while memory stays flat', async () => {
    const dest = path.join(dir, 'large.json');
    // (the server answers from this process: the child runs beside it, not blocking it)
    const child = await promisify(execFile)(process.execPath, ['--import', 'tsx', CHILD, srv.url, dest], { cwd: ROOT, encoding: 'utf8' });
    const r = JSON.parse(child.stdout) as { bytes: number; empty: boolean; downloadGrowth: number; count: number; lastCase: string; readGrowth: number };
    console.log(`downloaded ${(r.bytes / MB).toFixed(0)} MB, RSS growth ${(r.downloadGrowth / MB).toFixed(1)} MB; read ${r.count} records, RSS growth ${(r.readGrowth / MB).toFixed(1)} MB`);
    expect(r.bytes).toBeGreaterThanOrEqual(TARGET_BYTES);
    expect(fs.statSync(dest).size).toBe(r.bytes);
    expect(r.empty).toBe(false);
    expect(r.downloadGrowth).toBeLessThan(100 * MB);
    expect(r.count).toBe(recordsSent);
    expect(r.lastCase).toBe(`C-${RECORDS_PER_CHUNK - 1}`);
    expect(r.readGrowth).toBeLessThan(100 * MB);
  });
});
