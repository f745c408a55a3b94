import { parse as parseCsv } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { CHARGEBACK_COLUMNS, MID_CSV_COLUMNS, PREVENTION_COLUMNS, RECORD_SCHEMAS, type ReportKind } from '../contract/index.ts';
import { generateWorld } from '../sandbox/generate.ts';
import { type Match, type ReportQuery, previousMonth, renderReport, selectReport } from '../sandbox/reports.ts';
import type { ScenarioInput } from '../sandbox/scenario.ts';
import type { World } from '../sandbox/world.ts';

const START = '2026-11-22T10:00:00Z';
const world = generateWorld({ seed: 11, start: START });
const END_OF_WORLD = '2027-03-01T00:00:00Z';

async function body(w: World, q: ReportQuery, format: 'JSON' | 'CSV', chunkRecords?: number): Promise<{ text: string; chunks: number }> {
  let text = '';
  let chunks = 0;
  for await (const c of renderReport(w, q, format, { chunkRecords })) {
    text += c;
    chunks++;
  }
  return { text, chunks };
}

/** Parses a rendered report with the contract's record schemas, failing on any record that does not parse. */
function parseRecords(kind: ReportKind, text: string, format: 'JSON' | 'CSV'): unknown[] {
  const raw: unknown[] = format === 'JSON' ? JSON.parse(text) : parseCsv(text, { columns: true });
  return raw.map((r, i) => {
    const p = RECORD_SCHEMAS[kind].safeParse(r);
    if (!p.success) throw new Error(`${kind} ${format} record ${i} does not parse: ${p.error.message}`);
    return p.data;
  });
}

const pinnedScenario: ScenarioInput = {
  history_months: 3,
  horizon_months: 1,
  orders: 0,
  mids: [
    {
      mid: 'P1',
      alias: 'Pinned One',
      gateways: ['gw-a', 'gw-b'],
      monthly_transactions: 1500,
      months: {
        '2026-12': { mastercard: { transactions: 4321, transaction_amount: 98765.43 } },
        '2027-01': {
          visa: { transactions: 2000, transaction_amount: 100000.01, chargebacks: 30, fraud_chargebacks: 10 },
          mastercard: { transactions: 5000, transaction_amount: 250000.5, chargebacks: 77 },
          american_express: { transactions: 0, chargebacks: 3 },
          discover: { transactions: 100, transaction_amount: 5000, chargebacks: 0 },
        },
      },
    },
    { mid: 'P2', monthly_transactions: 800 },
  ],
};
// Start in January so the range's previous month is December of the year before.
const pinned = generateWorld({ seed: 5, start: '2027-01-10T00:00:00Z', scenario: pinnedScenario });

describe('mid_report', () => {
  const jan: ReportQuery = { kind: 'mid_report', start: '2027-01-01 00:00:00', end: '2027-01-31 23:59:59', now: '2027-03-01T00:00:00Z', mids: ['P1'] };

  it('reproduces pinned monthly figures exactly over a calendar month', () => {
    const [r] = selectReport(pinned, jan) as any[];
    expect(r.mid).toBe('P1');
    expect(r.alias).toBe('Pinned One');
    expect(r.gateways).toEqual(['gw-a', 'gw-b']);
    expect(r.visa).toMatchObject({ transaction_count: 2000, transaction_amount: 100000.01, chargeback_count: 30 });
    expect(r.master_card).toMatchObject({ transaction_count: 5000, transaction_amount: 250000.5, chargeback_count: 77 });
    expect(r.discover).toMatchObject({ transaction_count: 100, transaction_amount: 5000, chargeback_count: 0, chargeback_ratio: 0 });
    expect(r.transaction_count).toBe(7100);
    expect(r.transaction_amount).toBe(355000.51);
    expect(r.chargeback_count).toBe(110);
    expect(r.visa.chargeback_ratio).toBeCloseTo(30 / 2000, 12);
    const cbAmount = pinned.chargebacks.filter((c) => c.mid === 'P1' && c.card_brand === 'visa' && c.received_at.startsWith('2027-01')).reduce((s, c) => s + Math.round(c.amount * 100), 0) / 100;
    expect(r.visa.chargeback_amount).toBe(cbAmount);
    expect(r.visa.chargeback_amount_ratio).toBeCloseTo(cbAmount / 100000.01, 12);
  });

  it('gives master_card the previous calendar month, across a year boundary (January -> December)', () => {
    expect(previousMonth('2027-01-01T00:00:00Z')).toBe('2026-12');
    expect(previousMonth('2026-07-15T00:00:00Z')).toBe('2026-06');
    const [r] = selectReport(pinned, jan) as any[];
    expect(r.master_card.previous_month_transaction_count).toBe(4321);
    expect(r.master_card.previous_month_transaction_amount).toBe(98765.43);
    expect(r.visa.previous_month_transaction_count).toBeUndefined();
  });

  // Corrected reading: this test held ratios null without transactions; the spec types every ratio a float,
  // so they are 0 and the counts beside them show there was nothing to divide by.
  it('gives ratios as floats (0) where a network has no transactions, with the counts that show why', () => {
    const [r] = selectReport(pinned, jan) as any[];
    expect(r.amex).toEqual({ chargeback_amount_ratio: 0, chargeback_amount: expect.any(Number), chargeback_count: 3, chargeback_ratio: 0, transaction_amount: 0, transaction_count: 0 });
    for (const k of ['visa', 'master_card', 'discover', 'amex']) {
      for (const f of ['chargeback_amount_ratio', 'chargeback_ratio']) expect(typeof r[k][f], `${k}.${f}`).toBe('number');
    }
  });

  it('counts only settled days and received chargebacks up to now', () => {
    const now = '2027-01-10T12:00:00Z';
    const [r] = selectReport(pinned, { ...jan, now }) as any[];
    const days = pinned.daily.filter((d) => d.mid === 'P1' && d.day >= '2027-01-01' && d.day < '2027-01-10');
    expect(r.transaction_count).toBe(days.reduce((s, d) => s + d.transaction_count, 0));
    expect(r.chargeback_count).toBe(pinned.chargebacks.filter((c) => c.mid === 'P1' && c.received_at >= '2027-01-01T00:00:00Z' && c.received_at <= now).length);
  });

  it('returns one record per MID, filtered by mids; none for a range without data', () => {
    expect(selectReport(pinned, { ...jan, mids: undefined }).map((r) => r.mid)).toEqual(['P1', 'P2']);
    expect(selectReport(pinned, { ...jan, mids: ['P2'] }).map((r) => r.mid)).toEqual(['P2']);
    expect(selectReport(pinned, { ...jan, mids: ['nope'] })).toEqual([]);
    expect(selectReport(pinned, { ...jan, mids: [] }).map((r) => r.mid)).toEqual(['P1', 'P2']);
    expect(selectReport(pinned, { ...jan, start: '2020-01-01 00:00:00', end: '2020-01-31 23:59:59' })).toEqual([]);
  });
});

describe('chargebacks report', () => {
  const all: ReportQuery = { kind: 'chargebacks', start: '2026-05-01 00:00:00', end: '2027-02-28 23:59:59', now: END_OF_WORLD };

  it('holds the cases received in the range, with the spec fields', () => {
    const q: ReportQuery = { ...all, start: '2026-09-01 00:00:00', end: '2026-09-30 23:59:59' };
    const recs = selectReport(world, q);
    const expected = world.chargebacks.filter((c) => c.received_at.startsWith('2026-09'));
    expect(recs.map((r) => r.case_number)).toEqual(expected.map((c) => c.case_number));
    const r = recs[0];
    const c = expected[0];
    expect(r.card_number).toBe(`${c.card_first_6}******${c.card_last_4}`);
    expect(r.card_number).toMatch(/^\d{6}\*{6}\d{4}$/);
    expect(r.card_type).toBe(c.card_brand);
    expect(r.date_received).toMatch(/^2026-09-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(r.transaction_date).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect([r.order_id, r.name, r.tracking_number]).toEqual(['', '', '']);
    for (const rec of recs) expect(Object.keys(rec).every((k) => (CHARGEBACK_COLUMNS as readonly string[]).includes(k))).toBe(true);
    const noArn = recs.find((x) => x.arn === undefined);
    if (noArn) expect('arn' in noArn).toBe(false);
  });

  it('shows the status current at now: a later now shows a later status', () => {
    const c = world.chargebacks.find((x) => x.statuses.length >= 4)!;
    const q = (now: string): ReportQuery => ({ ...all, now });
    const statusAt = (now: string) => selectReport(world, q(now)).find((r) => r.case_number === c.case_number)?.status;
    expect(statusAt(c.statuses[0].at)).toBe('New');
    for (const s of c.statuses) expect(statusAt(s.at)).toBe(s.status);
    const before = new Date(Date.parse(c.received_at) - 1000).toISOString();
    expect(statusAt(before)).toBeUndefined();
  });

  it('holds nothing received after now', () => {
    const recs = selectReport(world, { ...all, now: START });
    expect(recs.length).toBe(world.chargebacks.filter((c) => c.received_at <= START).length);
    expect(recs.every((r) => String(r.date_received) <= '2026-11-22 10:00:00')).toBe(true);
  });

  it('filters by mids', () => {
    const recs = selectReport(world, { ...all, mids: ['860100000104', '860100000105'] });
    expect(new Set(recs.map((r) => r.mid))).toEqual(new Set(['860100000104', '860100000105']));
    expect(recs.length).toBe(world.chargebacks.filter((c) => c.mid === '860100000104' || c.mid === '860100000105').length);
  });

  it('fills order_id, name and tracking_number once the case is matched', () => {
    const c = world.chargebacks[3];
    const m: Match = { order_id: 'SO-1', order_guid: 'ord_0123456789abcdef0123456789abcdef', name: 'Ann Lee', tracking_number: '1Z999' };
    const recs = selectReport(world, { ...all, matchOf: (e, guid) => (e === 'chargeback' && guid === c.chargeback_guid ? m : undefined) });
    const r = recs.find((x) => x.case_number === c.case_number)!;
    expect([r.order_id, r.name, r.tracking_number]).toEqual(['SO-1', 'Ann Lee', '1Z999']);
    expect(recs.filter((x) => x.order_id !== '')).toHaveLength(1);
  });
});

describe('prevention report', () => {
  const all: ReportQuery = { kind: 'prevention', start: '2026-05-01 00:00:00', end: '2027-02-28 23:59:59', now: END_OF_WORLD };

  it('holds Ethoca and Verifi alerts only, never TC40 fraud reports', () => {
    const recs = selectReport(world, all);
    expect(recs.length).toBe(world.alerts.filter((a) => a.prevention_type !== 'tc40').length);
    expect(new Set(recs.map((r) => r.source_partner))).toEqual(new Set(['Ethoca', 'Verifi']));
    for (const r of recs) expect(Object.keys(r).every((k) => (PREVENTION_COLUMNS as readonly string[]).includes(k))).toBe(true);
  });

  it('lists the statuses reached by now', () => {
    const a = world.alerts.find((x) => x.prevention_type === 'ethoca')!;
    const at = (now: string) => selectReport(world, { ...all, now }).find((r) => r.alert_case_id === a.prevention_case_number)?.statuses;
    expect(at(a.statuses[0].at)).toEqual(['New']);
    expect(at(a.statuses[1].at)).toEqual(['New', 'Pending']);
    expect(at(a.statuses[2].at)).toEqual(['New', 'Pending', 'Complete']);
  });

  it('leaves mid, order_id and name empty until matched', () => {
    const a = world.alerts.find((x) => x.prevention_type === 'verifi')!;
    const matchOf = (e: string, guid: string) => (e === 'prevention' && guid === a.prevention_guid ? { order_id: 'SO-9', order_guid: 'ord_x', name: 'Bo Chen' } : undefined);
    const recs = selectReport(world, { ...all, matchOf });
    const r = recs.find((x) => x.alert_case_id === a.prevention_case_number)!;
    expect([r.mid, r.order_id, r.name]).toEqual([a.mid, 'SO-9', 'Bo Chen']);
    const other = recs.find((x) => x.alert_case_id !== a.prevention_case_number)!;
    expect([other.mid, other.order_id, other.name]).toEqual(['', '', '']);
    expect(other.bin).toMatch(/^\d{6}$/);
  });

  it('filters by mids (the alert\'s own merchant account)', () => {
    const recs = selectReport(world, { ...all, mids: ['860100000102'] });
    expect(recs.length).toBe(world.alerts.filter((a) => a.mid === '860100000102' && a.prevention_type !== 'tc40').length);
  });
});

describe('rendering', () => {
  const queries: Record<ReportKind, ReportQuery> = {
    chargebacks: { kind: 'chargebacks', start: '2026-08-01 00:00:00', end: '2026-10-31 23:59:59', now: START },
    prevention: { kind: 'prevention', start: '2026-08-01 00:00:00', end: '2026-10-31 23:59:59', now: START },
    mid_report: { kind: 'mid_report', start: '2026-10-01 00:00:00', end: '2026-10-31 23:59:59', now: START },
  };

  for (const kind of ['chargebacks', 'prevention', 'mid_report'] as const) {
    it(`renders ${kind} as JSON and CSV that parse with the contract and agree`, async () => {
      const json = await body(world, queries[kind], 'JSON', 50);
      const csv = await body(world, queries[kind], 'CSV', 50);
      const fromJson = parseRecords(kind, json.text, 'JSON');
      const fromCsv = parseRecords(kind, csv.text, 'CSV');
      expect(fromJson.length).toBeGreaterThan(0);
      expect(fromCsv).toEqual(fromJson);
      expect(JSON.parse(json.text)).toEqual(selectReport(world, queries[kind]));
    });
  }

  it('writes the CSV header in the contract column order', async () => {
    const heads = async (kind: ReportKind) => (await body(world, queries[kind], 'CSV')).text.split('\n')[0];
    expect(await heads('chargebacks')).toBe(CHARGEBACK_COLUMNS.join(','));
    expect(await heads('prevention')).toBe(PREVENTION_COLUMNS.join(','));
    expect(await heads('mid_report')).toBe(MID_CSV_COLUMNS.join(','));
  });

  it('streams in chunks of a few hundred records, never one string', async () => {
    const q = { ...queries.chargebacks, start: '2026-05-01 00:00:00', end: '2027-02-28 23:59:59', now: END_OF_WORLD };
    const n = selectReport(world, q).length;
    const json = await body(world, q, 'JSON');
    expect(json.chunks).toBe(Math.ceil(n / 500));
    expect(JSON.parse(json.text)).toHaveLength(n);
    const csv = await body(world, q, 'CSV', 100);
    expect(csv.chunks).toBe(Math.ceil(n / 100));
    expect(parseCsv(csv.text, { columns: true })).toHaveLength(n);
  });

  it('renders an empty result as an empty body in both formats', async () => {
    for (const kind of ['chargebacks', 'prevention', 'mid_report'] as const) {
      const q = { ...queries[kind], start: '2020-01-01 00:00:00', end: '2020-01-31 23:59:59' };
      expect(await body(world, q, 'JSON')).toEqual({ text: '', chunks: 0 });
      expect(await body(world, q, 'CSV')).toEqual({ text: '', chunks: 0 });
      expect(await body(world, { ...queries[kind], mids: ['no-such-mid'] }, 'JSON')).toEqual({ text: '', chunks: 0 });
    }
  });

  it('renders a report that ends exactly on a chunk boundary as valid JSON', async () => {
    const q = queries.chargebacks;
    const n = selectReport(world, q).length;
    const json = await body(world, q, 'JSON', n);
    expect(json.chunks).toBe(1);
    expect(JSON.parse(json.text)).toHaveLength(n);
    const one = await body(world, q, 'JSON', 1);
    expect(JSON.parse(one.text)).toHaveLength(n);
  });

  it('rejects a request whose dates are not dates, before any chunk', () => {
    expect(() => renderReport(world, { ...queries.chargebacks, start: 'yesterday' })).toThrow(/start/);
  });
});

describe('CSV writer', () => {
  it('writes exactly what csv-stringify writes, quoting only where needed', async () => {
    const { stringify } = await import('csv-stringify/sync');
    const { csvLines } = await import('../sandbox/reports.ts');
    const columns = ['a', 'b', 'c', 'd', 'e'];
    const rows = [
      { a: 'plain', b: 'with,comma', c: 'say "hi"', d: 'two\nlines', e: 'cr\rhere' },
      { a: 1.5, b: 0, c: null, d: undefined, e: true },
      { a: '', b: false, c: ' spaced ', d: 'semi;colon', e: 'ünïcödé' },
      { a: 1e-7, b: -3, c: 'x', e: 'tail' },
    ];
    expect(csvLines(rows, columns, true)).toBe(stringify(rows, { header: true, columns }));
    expect(csvLines(rows, columns, false)).toBe(stringify(rows, { header: false, columns }));
    const recs = selectReport(world, { kind: 'mid_report', start: '2026-10-01 00:00:00', end: '2026-10-31 23:59:59', now: START });
    const { flattenMidRecord } = await import('../contract/index.ts');
    const flat = recs.map((r) => flattenMidRecord(r));
    expect(csvLines(flat, MID_CSV_COLUMNS, true)).toBe(stringify(flat, { header: true, columns: MID_CSV_COLUMNS }));
  });
});
