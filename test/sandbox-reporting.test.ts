import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { parse } from 'csv-parse/sync';
import { ChargebackRecordSchema, MidRecordSchema, PreventionRecordSchema } from '../contract/index.ts';
import { buildSandbox } from '../sandbox/server.ts';
import { tinyWorld } from './sandbox-fixtures.ts';

describe('sandbox reporting interface', () => {
  let app: FastifyInstance;
  beforeEach(async () => {
    app = await buildSandbox({ world: tinyWorld() });
  });
  afterEach(async () => {
    await app.close();
  });

  const body = (over: Record<string, unknown> = {}) => ({
    start_date: '2026-01-01 00:00:00',
    end_date: '2026-01-31T23:59:59Z',
    company_token: 'sandbox-company-token',
    ...over,
  });
  const report = (kind: string, b: unknown, key = 'sandbox-reporting-key', headers: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: `/reporting/${kind}`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      payload: JSON.stringify(b),
    });

  it('answers a JSON chargeback report of what is known at the clock', async () => {
    const res = await report('chargebacks', body());
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    const records = res.json() as unknown[];
    expect(records).toHaveLength(1);
    expect(ChargebackRecordSchema.parse(records[0])).toMatchObject({ case_number: 'CASE-1', status: 'New', mid: '860100000001' });
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P5D' } });
    const later = (await report('chargebacks', body())).json() as Array<{ case_number: string; status: string }>;
    expect(later.map((r) => `${r.case_number}:${r.status}`).sort()).toEqual(['CASE-1:New', 'CASE-2:Won', 'CASE-3:Did Not Fight']);
  });

  it('answers CSV (text/csv) when output_format is CSV', async () => {
    const res = await report('prevention', body({ output_format: 'CSV' }));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/csv/);
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P2D' } });
    const csv = (await report('prevention', body({ output_format: 'csv' }))).body;
    const rows = parse(csv, { columns: true }) as unknown[];
    expect(rows).toHaveLength(1);
    expect(PreventionRecordSchema.parse(rows[0])).toMatchObject({ alert_case_id: 'ETH-1', source_partner: 'Ethoca' });
  });

  it('answers the MID report', async () => {
    const res = await report('mid_report', body());
    expect(res.statusCode).toBe(200);
    const records = res.json() as unknown[];
    expect(records.length).toBeGreaterThan(0);
    expect(MidRecordSchema.parse(records[0]).mid).toBe('860100000001');
  });

  it('answers an empty 200 when nothing matches valid parameters (range or mids filter)', async () => {
    const none = await report('chargebacks', body({ start_date: '2024-01-01 00:00:00', end_date: '2024-01-31 00:00:00' }));
    expect(none.statusCode).toBe(200);
    expect(none.body).toBe('');
    const other = await report('chargebacks', body({ mids: ['999'] }));
    expect(other.statusCode).toBe(200);
    expect(other.body).toBe('');
    const csv = await report('chargebacks', body({ mids: ['999'], output_format: 'CSV' }));
    expect(csv.body).toBe('');
  });

  it('checks both the reporting key and the company token (401 for either)', async () => {
    const wrongKey = await report('chargebacks', body(), 'wrong-key');
    expect(wrongKey.statusCode).toBe(401);
    expect(wrongKey.json().error).toBe(true);
    const wrongToken = await report('chargebacks', body({ company_token: 'wrong' }));
    expect(wrongToken.statusCode).toBe(401);
    expect(wrongToken.json().message).toMatch(/company_token/);
    const noHeader = await app.inject({ method: 'POST', url: '/reporting/chargebacks', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body()) });
    expect(noHeader.statusCode).toBe(401);
  });

  it('answers 400 for a bad range, a bad format or a bad date-time, naming the field', async () => {
    const range = await report('chargebacks', body({ start_date: '2026-02-01 00:00:00', end_date: '2026-01-01 00:00:00' }));
    expect(range.statusCode).toBe(400);
    expect(range.json().message).toMatch(/end_date/);
    const fmt = await report('chargebacks', body({ output_format: 'XML' }));
    expect(fmt.statusCode).toBe(400);
    expect(fmt.json().message).toMatch(/output_format/);
    const dt = await report('chargebacks', body({ start_date: 'last week' }));
    expect(dt.statusCode).toBe(400);
    expect(dt.json().message).toMatch(/start_date/);
  });

  it('accepts only application/json requests', async () => {
    const res = await report('chargebacks', body(), 'sandbox-reporting-key', { 'content-type': 'text/plain' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/application\/json/);
  });

  it('shows order_id and name once a chargeback is matched to a pushed order', async () => {
    const { authorization_key: k } = (await app.inject({ method: 'POST', url: '/orders/v1/auth', payload: { username: 'sandbox-user', password: 'sandbox-password' } })).json();
    await app.inject({
      method: 'POST',
      url: '/orders/v1/order',
      headers: { authorization: `Bearer ${k}` },
      payload: { order_id: 'H-1', order_date: '2025-12-20T15:00:00Z', order_total: '50.00', cc_first_6: '411111', cc_last_4: '1111', billing_first_name: 'Ada', billing_last_name: 'Lovelace' },
    });
    const [rec] = (await report('chargebacks', body())).json();
    expect(rec).toMatchObject({ case_number: 'CASE-1', order_id: 'H-1', name: 'Ada Lovelace' });
  });
});
