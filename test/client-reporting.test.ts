import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createReportingClient, ReportWriteError, type ReportingClient } from '../client/reporting.ts';
import { readReportRecords, ReportFormatError, type RawRecord } from '../client/report-records.ts';
import { ServiceHttpError, ServiceTimeoutError } from '../client/errors.ts';
import { ValidationError } from '../lib/errors.ts';
import { createLogger } from '../lib/log.ts';
import { ChargebackRecordSchema, unflattenMidRow } from '../contract/index.ts';
import { startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

let srv: ScriptedServer;
let dir: string;
let rc: ReportingClient;
const logger = createLogger({ level: 'silent' });
const sleeps: number[] = [];
const retry = { sleep: async (ms: number) => void sleeps.push(ms), random: () => 1, retries: 3 };
const KEY = 'reporting-key-9a8b7c';
const COMPANY = 'company-token-5e4d3c';
const FETCHED = Date.UTC(2026, 10, 22, 6, 0, 0);

const chargeback = {
  case_number: 'C-1',
  status: 'New',
  mid: 'M1',
  card_number: '555555******4444',
  card_type: 'mastercard',
  amount: 94.76,
  currency: 'USD',
  reason_code: '4853',
  reason: 'Cardholder Dispute, "not as described" [sic] {x}',
  date_received: '2026-11-01 10:00:00',
  transaction_date: '2026-10-20',
  order_id: '',
  name: '',
  tracking_number: '',
};

async function collect(it: AsyncIterable<RawRecord>): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for await (const r of it) out.push(r);
  return out;
}

beforeAll(async () => {
  srv = await startScriptedServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
});
afterAll(async () => {
  await rc?.close();
  await srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await rc?.close();
  srv.reset();
  sleeps.length = 0;
  rc = createReportingClient(
    { reportingBaseUrl: srv.url, reportingKey: KEY, companyToken: COMPANY },
    { retry, logger, now: () => FETCHED, timeoutMs: 2_000, reportTimeoutMs: 5_000 },
  );
});

describe('reporting interface', () => {
  it('posts the report request with the key as bearer and dates as YYYY-MM-DD HH:MM:SS, and streams a JSON report to disk', async () => {
    srv.script('POST', '/chargebacks', { body: [chargeback, { ...chargeback, case_number: 'C-2' }] });
    const dest = path.join(dir, 'json', 'cb.json');
    const got = await rc.fetchReport({ kind: 'chargebacks', start: '2026-11-01T00:00:00Z', end: '2026-11-30 23:59:59', mids: ['M1', 'M2'], dest });
    const [req] = srv.requestsTo('POST', '/chargebacks');
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.json()).toEqual({
      start_date: '2026-11-01 00:00:00',
      end_date: '2026-11-30 23:59:59',
      company_token: COMPANY,
      mids: ['M1', 'M2'],
      output_format: 'JSON',
    });
    expect(got).toMatchObject({
      path: dest,
      format: 'JSON',
      kind: 'chargebacks',
      start: '2026-11-01T00:00:00Z',
      end: '2026-11-30T23:59:59Z',
      mids: ['M1', 'M2'],
      fetchedAt: '2026-11-22T06:00:00Z',
      empty: false,
      status: 200,
      contentType: 'application/json',
    });
    expect(got.bytes).toBe(fs.statSync(dest).size);
    expect(fs.existsSync(`${dest}.part`)).toBe(false);
    const records = await collect(readReportRecords(dest, 'chargebacks', 'JSON'));
    expect(records.map((r) => r.case_number)).toEqual(['C-1', 'C-2']);
    expect(records[0].reason).toBe(chargeback.reason);
    expect(ChargebackRecordSchema.parse(records[0]).card_type).toBe('mastercard');
  });

  it('asks for CSV and reads it back with columns from the header row', async () => {
    const csv = 'mid,alias,gateways,chargeback_count,visa_chargeback_count\r\nM1,Shop,"g1;g2",3,2\r\nM2,"Other, Inc",g3,0,0\r\n';
    srv.script('POST', '/mid_report', { body: csv, headers: { 'content-type': 'text/csv' } });
    const dest = path.join(dir, 'mid.csv');
    const got = await rc.fetchReport({ kind: 'mid_report', start: '2026-11-01T00:00:00Z', end: '2026-11-30T23:59:59Z', format: 'csv', dest });
    expect(srv.requestsTo('POST', '/mid_report')[0].json()).toMatchObject({ output_format: 'CSV', start_date: '2026-11-01 00:00:00' });
    expect((srv.requestsTo('POST', '/mid_report')[0].json() as Record<string, unknown>).mids).toBeUndefined();
    expect(got).toMatchObject({ format: 'CSV', mids: null, empty: false, contentType: 'text/csv', bytes: Buffer.byteLength(csv) });
    const rows = await collect(readReportRecords(dest, 'mid_report', 'CSV'));
    expect(rows).toEqual([
      { mid: 'M1', alias: 'Shop', gateways: 'g1;g2', chargeback_count: '3', visa_chargeback_count: '2' },
      { mid: 'M2', alias: 'Other, Inc', gateways: 'g3', chargeback_count: '0', visa_chargeback_count: '0' },
    ]);
    expect(unflattenMidRow(rows[0])).toMatchObject({ visa: { chargeback_count: '2' } });
  });

  it('marks an empty 200 (no bytes, or whitespace only) as an empty report that yields no records', async () => {
    srv.script('POST', '/prevention', { status: 200 }, { status: 200, body: ' \r\n ' });
    for (const [i, format] of (['JSON', 'CSV'] as const).entries()) {
      const dest = path.join(dir, `empty-${i}`);
      const got = await rc.fetchReport({ kind: 'prevention', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', format, dest });
      expect(got.empty).toBe(true);
      expect(got.status).toBe(200);
      expect(await collect(readReportRecords(dest, 'prevention', format))).toEqual([]);
    }
  });

  it('refuses a request with a bad kind or a range that ends before it starts, before sending it', async () => {
    await expect(rc.fetchReport({ kind: 'refunds' as never, start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest: path.join(dir, 'x') })).rejects.toBeInstanceOf(ValidationError);
    await expect(rc.fetchReport({ kind: 'chargebacks', start: '2026-11-05T00:00:00Z', end: '2026-11-02T00:00:00Z', dest: path.join(dir, 'x') })).rejects.toThrow(/end_date/);
    expect(srv.requests).toHaveLength(0);
  });

  it('retries a download cut off mid-body and a 500, then keeps only the complete file', async () => {
    const full = JSON.stringify([chargeback, { ...chargeback, case_number: 'C-9' }]);
    srv.script(
      'POST',
      '/chargebacks',
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(full.length) });
        res.write(full.slice(0, 40));
        setTimeout(() => res.destroy(), 20);
      },
      { status: 500, body: { error: true, message: 'report engine busy' } },
      { body: full },
    );
    const dest = path.join(dir, 'retried.json');
    const got = await rc.fetchReport({ kind: 'chargebacks', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest });
    expect(got.bytes).toBe(full.length);
    expect(fs.readFileSync(dest, 'utf8')).toBe(full);
    expect(sleeps).toEqual([500, 1000]);
  });

  it('leaves no file behind when the report fails, and does not retry a 422', async () => {
    srv.script('POST', '/chargebacks', { status: 422, body: { error: true, message: 'start_date out of range', fields: ['start_date'] } });
    const dest = path.join(dir, 'failed.json');
    const e = (await rc.fetchReport({ kind: 'chargebacks', start: '2020-01-01T00:00:00Z', end: '2020-01-02T00:00:00Z', dest }).catch((x: unknown) => x)) as ServiceHttpError;
    expect(e).toBeInstanceOf(ServiceHttpError);
    expect(e).toMatchObject({ iface: 'reporting', operation: 'fetch chargebacks report', httpStatus: 422, retryable: false });
    expect(e.message).toContain('start_date');
    expect(fs.existsSync(dest) || fs.existsSync(`${dest}.part`)).toBe(false);
    expect(srv.requestsTo('POST', '/chargebacks')).toHaveLength(1);
  });

  it('gives a report download its own timeout and names CBP_REPORT_TIMEOUT_MS', async () => {
    await rc.close();
    rc = createReportingClient(
      { reportingBaseUrl: srv.url, reportingKey: KEY, companyToken: COMPANY },
      { retry: { ...retry, retries: 0 }, logger, timeoutMs: 50, reportTimeoutMs: 300 },
    );
    srv.script('POST', '/prevention', (_req, res) => {
      // Headers after 150 ms (past the 50 ms request timeout, within the report's 300 ms), then silence.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[');
      }, 150);
    });
    const dest = path.join(dir, 'slow.json');
    const e = await rc.fetchReport({ kind: 'prevention', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ServiceTimeoutError);
    expect((e as Error).message).toContain('CBP_REPORT_TIMEOUT_MS');
    expect((e as ServiceTimeoutError).details.timeoutMs).toBe(300);
    expect(fs.existsSync(`${dest}.part`)).toBe(false);
  });

  it('reports a file that cannot be written as such, without retrying', async () => {
    srv.script('POST', '/chargebacks', { body: [chargeback] });
    const dest = path.join(dir, 'blocked.json');
    fs.mkdirSync(`${dest}.part`); // the .part path is taken by a folder
    const e = await rc.fetchReport({ kind: 'chargebacks', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ReportWriteError);
    expect((e as ReportWriteError).retryable).toBe(false);
    expect(srv.requestsTo('POST', '/chargebacks')).toHaveLength(1);
  });

  it('never puts the reporting key or company token in an error', async () => {
    srv.script('POST', '/chargebacks', { status: 401, body: `unauthorized: key ${KEY} for company ${COMPANY}` });
    const e = (await rc.fetchReport({ kind: 'chargebacks', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest: path.join(dir, 'x.json') }).catch((x: unknown) => x)) as ServiceHttpError;
    expect(e.message).toContain('CBP_REPORTING_KEY');
    const all = `${e.message} ${JSON.stringify(e.toJSON())} ${e.serviceMessage}`;
    expect(all).not.toContain(KEY);
    expect(all).not.toContain(COMPANY);
  });
});

describe('reading report files', () => {
  it('streams JSON records across chunk boundaries, with brackets, commas and escaped quotes inside strings', async () => {
    const recs = Array.from({ length: 5000 }, (_, i) => ({
      case_number: `C-${i}`,
      reason: `tricky ] } , [ { \\" \u00e9\u{1F600} ${'x'.repeat(i % 97)}`,
      nested: { a: [1, { b: '}' }] },
    }));
    const file = path.join(dir, 'tricky.json');
    fs.writeFileSync(file, `\ufeff [\n${recs.map((r) => JSON.stringify(r)).join(' ,\n')}\n]\n`);
    const got = await collect(readReportRecords(file, 'chargebacks', 'json'));
    expect(got).toEqual(recs);
  });

  it('reads an empty JSON array as no records', async () => {
    const file = path.join(dir, 'arr.json');
    fs.writeFileSync(file, ' [ ] ');
    expect(await collect(readReportRecords(file, 'prevention', 'JSON'))).toEqual([]);
  });

  it('rejects a JSON report that is not an array of records, or is truncated', async () => {
    const cases = ['{"error":true,"message":"x"}', '[{"a":1},', '[{"a":1} {"b":2}]', '[1,2]'];
    for (const [i, text] of cases.entries()) {
      const file = path.join(dir, `bad-${i}.json`);
      fs.writeFileSync(file, text);
      await expect(collect(readReportRecords(file, 'chargebacks', 'JSON'))).rejects.toBeInstanceOf(ReportFormatError);
    }
  });
});
