// The reporting interface: request body and the three record kinds, as JSON and as CSV rows.
import { describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import {
  ChargebackRecordSchema,
  MID_CSV_COLUMNS,
  MidRecordSchema,
  PreventionRecordSchema,
  ReportRequestSchema,
  CHARGEBACK_COLUMNS,
  PREVENTION_COLUMNS,
  flattenMidRecord,
  reportDateTime,
  safeParseWith,
} from '../contract/index.ts';
import { chargebackRecord, midRecord, preventionRecord, reportRequest } from './contract-fixtures.ts';

/** Writes records as a CSV text with the given columns, then reads it back as rows of strings. */
function viaCsv(rows: Array<Record<string, unknown>>, columns: readonly string[]): Array<Record<string, string>> {
  const text = stringifyCsv(
    rows.map((r) => Object.fromEntries(columns.map((c) => [c, Array.isArray(r[c]) ? (r[c] as unknown[]).join(';') : r[c]]))),
    { header: true, columns: [...columns] },
  );
  return parseCsv(text, { columns: true }) as Array<Record<string, string>>;
}

describe('report request body', () => {
  it('parses start_date, end_date, company_token, mids and output_format, normalising the dates', () => {
    expect(ReportRequestSchema.parse(reportRequest)).toEqual({
      ...reportRequest,
      start_date: '2026-03-01T00:00:00Z',
      end_date: '2026-03-31T23:59:59Z',
    });
  });

  it('treats mids and output_format as optional', () => {
    const { mids: _m, output_format: _o, ...rest } = reportRequest;
    expect(ReportRequestSchema.safeParse(rest).success).toBe(true);
  });

  it('accepts output_format CSV in any case', () => {
    expect(ReportRequestSchema.parse({ ...reportRequest, output_format: 'csv' }).output_format).toBe('CSV');
  });

  it('rejects an output_format other than JSON or CSV', () => {
    const r = safeParseWith(ReportRequestSchema, { ...reportRequest, output_format: 'XML' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^output_format: got "XML"; expected JSON or CSV/);
  });

  it('rejects a range whose end is before its start', () => {
    const r = safeParseWith(ReportRequestSchema, { ...reportRequest, end_date: '2026-02-01 00:00:00' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual(['end_date: got "2026-02-01 00:00:00"; expected start_date at or before end_date']);
  });

  it('writes report date-times the way the examples do: YYYY-MM-DD HH:MM:SS', () => {
    expect(reportDateTime('2026-03-01T00:00:00Z')).toBe('2026-03-01 00:00:00');
    expect(reportDateTime('2026-03-01')).toBe('2026-03-01 00:00:00');
  });
});

describe('record columns against the spec', () => {
  it('chargeback and prevention records have the spec fields, in its order', () => {
    expect(CHARGEBACK_COLUMNS).toEqual(
      'case_number status arn mid card_number card_type amount currency reason_code reason date_received transaction_date order_id name tracking_number'.split(' '),
    );
    expect(PREVENTION_COLUMNS).toEqual(
      'arn alert_case_id statuses mid merchant_descriptor source_partner bin last_four amount currency date_received transaction_date order_id name'.split(' '),
    );
    expect(Object.keys(ChargebackRecordSchema.shape)).toEqual([...CHARGEBACK_COLUMNS]);
    expect(Object.keys(PreventionRecordSchema.shape)).toEqual([...PREVENTION_COLUMNS]);
  });
});

describe('chargeback records', () => {
  it('parses a chargeback record with every field', () => {
    expect(ChargebackRecordSchema.parse(chargebackRecord)).toEqual(chargebackRecord);
  });

  it('accepts each chargeback status', () => {
    for (const s of ['Lost', 'New', 'Pending', 'Won', 'Did Not Fight', 'Pre-Arbitration', 'Result Unobtainable']) {
      expect(ChargebackRecordSchema.parse({ ...chargebackRecord, status: s }).status).toBe(s);
    }
  });

  it('parses a CSV row to the same record as JSON', () => {
    const [row] = viaCsv([chargebackRecord], CHARGEBACK_COLUMNS);
    expect(ChargebackRecordSchema.parse(row)).toEqual(ChargebackRecordSchema.parse(chargebackRecord));
  });

  it('accepts a date only where the time was not recorded, as midnight UTC', () => {
    expect(ChargebackRecordSchema.parse({ ...chargebackRecord, date_received: '2026-03-03' }).date_received).toBe('2026-03-03T00:00:00Z');
  });

  it('reads an unmatched record (empty order_id, name, tracking_number; no arn)', () => {
    const { arn: _a, ...rest } = chargebackRecord;
    const r = ChargebackRecordSchema.parse({ ...rest, order_id: '', name: '', tracking_number: '' });
    expect(r.order_id).toBeUndefined();
    expect(r.arn).toBeUndefined();
  });
});

describe('prevention records', () => {
  it('parses a prevention record with every field', () => {
    expect(PreventionRecordSchema.parse(preventionRecord)).toEqual(preventionRecord);
  });

  it('parses a CSV row (statuses joined by ";") to the same record as JSON', () => {
    const [row] = viaCsv([preventionRecord], PREVENTION_COLUMNS);
    expect(row.statuses).toBe('New;Pending');
    expect(PreventionRecordSchema.parse(row)).toEqual(PreventionRecordSchema.parse(preventionRecord));
  });

  it('accepts source_partner Ethoca and Verifi, and statuses New, Pending, Complete', () => {
    expect(PreventionRecordSchema.parse({ ...preventionRecord, source_partner: 'Verifi', statuses: ['Complete'] })).toMatchObject({
      source_partner: 'Verifi',
      statuses: ['Complete'],
    });
  });

  it('rejects an unknown status inside statuses, naming its index', () => {
    const r = safeParseWith(PreventionRecordSchema, { ...preventionRecord, statuses: ['New', 'Closed'] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^statuses\.1: got "Closed"; expected New, Pending or Complete/);
  });
});

describe('MID records', () => {
  it('parses a MID record with the four network objects and master_card previous-month fields', () => {
    const r = MidRecordSchema.parse(midRecord);
    expect(r).toEqual(midRecord);
    expect(r.master_card).toMatchObject({ previous_month_transaction_amount: 9000, previous_month_transaction_count: 180 });
  });

  it('lays out the MID CSV columns as documented: totals, then <network>_<field> per network', () => {
    const six = ['chargeback_amount_ratio', 'chargeback_amount', 'chargeback_count', 'chargeback_ratio', 'transaction_amount', 'transaction_count'];
    expect(MID_CSV_COLUMNS).toEqual([
      'mid', 'alias', 'gateways', ...six,
      ...six.map((f) => `visa_${f}`),
      ...six.map((f) => `master_card_${f}`), 'master_card_previous_month_transaction_amount', 'master_card_previous_month_transaction_count',
      ...six.map((f) => `discover_${f}`),
      ...six.map((f) => `amex_${f}`),
    ]);
  });

  it('parses the CSV row with prefixed columns to the same record as JSON', () => {
    const [row] = viaCsv([flattenMidRecord(midRecord)], MID_CSV_COLUMNS);
    expect(Object.keys(row)).toContain('master_card_previous_month_transaction_count');
    expect(Object.keys(row)).toContain('amex_chargeback_ratio');
    expect(MidRecordSchema.parse(row)).toEqual(MidRecordSchema.parse(midRecord));
  });

  it('reads network keys spelled mastercard or american_express as master_card and amex', () => {
    const { master_card, amex, ...rest } = midRecord;
    const r = MidRecordSchema.parse({ ...rest, mastercard: master_card, american_express: amex });
    expect(r).toEqual(midRecord);
  });

  it('keeps a network with no figures absent, whether omitted, null or all-empty CSV cells', () => {
    const { discover: _d, ...withoutDiscover } = midRecord;
    expect(MidRecordSchema.parse(withoutDiscover).discover).toBeUndefined();
    expect(MidRecordSchema.parse({ ...midRecord, discover: null }).discover).toBeUndefined();
    const [row] = viaCsv([flattenMidRecord(withoutDiscover)], MID_CSV_COLUMNS);
    expect(row.discover_chargeback_count).toBe('');
    const parsed = MidRecordSchema.parse(row);
    expect(parsed.discover).toBeUndefined();
    expect(parsed).toEqual(MidRecordSchema.parse(withoutDiscover));
  });

  it('keeps an empty ratio (no transactions) as null, never 0', () => {
    const r = MidRecordSchema.parse({ ...midRecord, transaction_amount: 0, transaction_count: 0, chargeback_ratio: '', chargeback_amount_ratio: null });
    expect(r.chargeback_ratio).toBeNull();
    expect(r.chargeback_amount_ratio).toBeNull();
  });

  it('names the network field and the CSV value when a prefixed column is invalid', () => {
    const [row] = viaCsv([flattenMidRecord(midRecord)], MID_CSV_COLUMNS);
    const r = safeParseWith(MidRecordSchema, { ...row, visa_chargeback_count: 'two' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual(['visa.chargeback_count: got "two"; expected a whole count (0, 1, 2, ...)']);
  });

  it('rejects a fractional transaction_count', () => {
    const r = safeParseWith(MidRecordSchema, { ...midRecord, transaction_count: 1.5 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual(['transaction_count: got 1.5; expected a whole count (0, 1, 2, ...)']);
  });
});
