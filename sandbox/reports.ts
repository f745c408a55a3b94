// The reporting interface's data side: which records a report holds at the sandbox clock's `now`, and their
// rendering as JSON or CSV in chunks (the server pipes the chunks to the response, so a 100,000-record report
// never exists as one string). Pure: the world is read, never changed; matches come from the caller.
import { type Network, toIsoUtc } from '../contract/common.ts';
import { type OutputFormat, type ReportKind, REPORT_CSV_COLUMNS, flattenMidRecord } from '../contract/reporting.ts';
import { ValidationError } from '../lib/errors.ts';
import type { World, WorldChargeback, WorldPreventionAlert } from './world.ts';

/** What the server knows of a case's merchant order once it has matched one. */
export interface Match {
  order_id: string;
  order_guid: string;
  /** customer name as on the order */
  name?: string;
  /** first shipment's tracking number; absent for digital goods */
  tracking_number?: string;
}
export type MatchOf = (entity: 'chargeback' | 'prevention', guid: string) => Match | undefined;

export interface ReportQuery {
  kind: ReportKind;
  /** range start and end, inclusive; either spelling of the spec. A bare end date means the end of that day. */
  start: string;
  end: string;
  /** only these MIDs; all when omitted or empty */
  mids?: readonly string[];
  /** the sandbox clock: nothing received after it exists yet */
  now: string;
  matchOf?: MatchOf;
}

export interface RenderOptions {
  /** records per chunk; default 500 */
  chunkRecords?: number;
}

export type ReportRecord = Record<string, unknown>;

const NETWORK_KEY: Record<Network, 'visa' | 'master_card' | 'discover' | 'amex'> = {
  visa: 'visa',
  mastercard: 'master_card',
  discover: 'discover',
  american_express: 'amex',
};
const SOURCE_PARTNER = { ethoca: 'Ethoca', verifi: 'Verifi' } as const;

/** `YYYY-MM-DD HH:MM:SS` from the world's `YYYY-MM-DDTHH:MM:SSZ` (the reporting examples' spelling). */
const wire = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;

interface Range {
  start: string;
  end: string;
  now: string;
  mids?: Set<string>;
}

function normalise(q: ReportQuery): Range {
  const issues: string[] = [];
  const start = toIsoUtc(String(q.start), true);
  if (!start) issues.push(`start: got ${JSON.stringify(q.start)}; expected a UTC date-time`);
  const bare = /^\s*\d{4}-\d{2}-\d{2}\s*$/.test(String(q.end));
  const end = bare ? `${String(q.end).trim()}T23:59:59Z` : toIsoUtc(String(q.end), true);
  if (!end || !toIsoUtc(end)) issues.push(`end: got ${JSON.stringify(q.end)}; expected a UTC date-time`);
  const now = toIsoUtc(String(q.now), true);
  if (!now) issues.push(`now: got ${JSON.stringify(q.now)}; expected a UTC date-time`);
  if (issues.length) throw new ValidationError('report request', issues);
  // An empty mids list filters nothing, like an omitted one: a filter that can only return nothing is no use.
  return { start: start!, end: end!, now: now!, mids: q.mids && q.mids.length > 0 ? new Set(q.mids) : undefined };
}

/** Index of the first element whose key is >= target, in an array sorted by that key. */
function lowerBound<T>(items: readonly T[], key: (x: T) => string, target: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key(items[mid]) < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const upTo = (a: string, b: string): string => (a < b ? a : b);

function statusAt(cb: WorldChargeback, now: string): string {
  let s = cb.statuses[0]?.status ?? 'New';
  for (const c of cb.statuses) {
    if (c.at <= now) s = c.status;
    else break;
  }
  return s;
}

function chargebackRecord(cb: WorldChargeback, now: string, m: Match | undefined): ReportRecord {
  const rec: ReportRecord = { case_number: cb.case_number, status: statusAt(cb, now) };
  if (cb.arn) rec.arn = cb.arn;
  rec.mid = cb.mid;
  rec.card_number = `${cb.card_first_6}******${cb.card_last_4}`;
  rec.card_type = cb.card_brand;
  rec.amount = cb.amount;
  rec.currency = cb.currency;
  rec.reason_code = cb.reason_code;
  rec.reason = cb.reason_description;
  rec.date_received = wire(cb.received_at);
  rec.transaction_date = wire(cb.transaction_at);
  rec.order_id = m?.order_id ?? '';
  rec.name = m?.name ?? '';
  rec.tracking_number = m?.tracking_number ?? '';
  return rec;
}

function preventionRecord(a: WorldPreventionAlert, now: string, m: Match | undefined): ReportRecord {
  const rec: ReportRecord = {};
  if (a.arn) rec.arn = a.arn;
  rec.alert_case_id = a.prevention_case_number;
  rec.statuses = a.statuses.filter((s) => s.at <= now).map((s) => s.status);
  // The spec: "mid (empty until matched)".
  rec.mid = m ? a.mid : '';
  rec.merchant_descriptor = a.merchant_descriptor;
  rec.source_partner = SOURCE_PARTNER[a.prevention_type as 'ethoca' | 'verifi'];
  rec.bin = a.card_first_6;
  rec.last_four = a.card_last_4;
  rec.amount = a.amount;
  rec.currency = a.currency;
  rec.date_received = wire(a.prevention_at);
  rec.transaction_date = wire(a.transaction_at);
  rec.order_id = m?.order_id ?? '';
  rec.name = m?.name ?? '';
  return rec;
}

function* chargebackRecords(world: World, r: Range, matchOf?: MatchOf): Generator<ReportRecord> {
  const last = upTo(r.end, r.now);
  const list = world.chargebacks;
  for (let i = lowerBound(list, (c) => c.received_at, r.start); i < list.length; i++) {
    const cb = list[i];
    if (cb.received_at > last) break;
    if (r.mids && !r.mids.has(cb.mid)) continue;
    yield chargebackRecord(cb, r.now, matchOf?.('chargeback', cb.chargeback_guid));
  }
}

function* preventionRecords(world: World, r: Range, matchOf?: MatchOf): Generator<ReportRecord> {
  const last = upTo(r.end, r.now);
  const list = world.alerts;
  for (let i = lowerBound(list, (a) => a.prevention_at, r.start); i < list.length; i++) {
    const a = list[i];
    if (a.prevention_at > last) break;
    // TC40 fraud reports are Visa's, not a prevention partner's alert: not in this report.
    if (a.prevention_type === 'tc40') continue;
    if (r.mids && !r.mids.has(a.mid)) continue;
    yield preventionRecord(a, r.now, matchOf?.('prevention', a.prevention_guid));
  }
}

interface Acc {
  txCount: number;
  txCents: number;
  cbCount: number;
  cbCents: number;
}
const acc = (): Acc => ({ txCount: 0, txCents: 0, cbCount: 0, cbCents: 0 });

function stats(a: Acc): ReportRecord {
  const has = a.txCount > 0;
  // The spec types both ratios as floats: without transactions (no denominator) they are 0, never null.
  // Consumers that must tell "no ratio" from "a ratio of 0" have the counts beside them.
  return {
    chargeback_amount_ratio: has && a.txCents > 0 ? a.cbCents / a.txCents : 0,
    chargeback_amount: a.cbCents / 100,
    chargeback_count: a.cbCount,
    chargeback_ratio: has ? a.cbCount / a.txCount : 0,
    transaction_amount: a.txCents / 100,
    transaction_count: a.txCount,
  };
}

/** The calendar month (YYYY-MM) before the one an ISO time falls in. */
export function previousMonth(iso: string): string {
  const y = Number(iso.slice(0, 4));
  const m = Number(iso.slice(5, 7));
  return m === 1 ? `${y - 1}-12` : `${y}-${String(m - 1).padStart(2, '0')}`;
}

function* midRecords(world: World, r: Range): Generator<ReportRecord> {
  const mids = world.mids.filter((m) => !r.mids || r.mids.has(m.mid));
  if (mids.length === 0) return;
  type PerMid = { total: Acc; nets: Record<Network, Acc>; prev: Acc };
  const per = new Map<string, PerMid>();
  for (const m of mids) per.set(m.mid, { total: acc(), nets: { visa: acc(), mastercard: acc(), american_express: acc(), discover: acc() }, prev: acc() });
  // A settlement day counts when its midnight lies in the range and the whole day has passed by `now`.
  const nowDay = r.now.slice(0, 10);
  const prevKey = previousMonth(r.start);
  for (const d of world.daily) {
    const p = per.get(d.mid);
    if (!p || d.day >= nowDay) continue;
    const cents = Math.round(d.transaction_amount * 100);
    const midnight = `${d.day}T00:00:00Z`;
    if (midnight >= r.start && midnight <= r.end) {
      p.total.txCount += d.transaction_count;
      p.total.txCents += cents;
      p.nets[d.network].txCount += d.transaction_count;
      p.nets[d.network].txCents += cents;
    }
    if (d.network === 'mastercard' && d.day.startsWith(prevKey)) {
      p.prev.txCount += d.transaction_count;
      p.prev.txCents += cents;
    }
  }
  const last = upTo(r.end, r.now);
  const list = world.chargebacks;
  for (let i = lowerBound(list, (c) => c.received_at, r.start); i < list.length; i++) {
    const cb = list[i];
    if (cb.received_at > last) break;
    const p = per.get(cb.mid);
    if (!p) continue;
    const cents = Math.round(cb.amount * 100);
    p.total.cbCount++;
    p.total.cbCents += cents;
    p.nets[cb.card_brand].cbCount++;
    p.nets[cb.card_brand].cbCents += cents;
  }
  for (const m of mids) {
    const p = per.get(m.mid)!;
    // "No data" for a MID: nothing settled and nothing received in the range.
    if (p.total.txCount === 0 && p.total.cbCount === 0) continue;
    const rec: ReportRecord = { mid: m.mid, alias: m.alias, gateways: [...m.gateways], ...stats(p.total) };
    for (const n of ['visa', 'mastercard', 'discover', 'american_express'] as const) {
      const s = stats(p.nets[n]);
      if (n === 'mastercard') {
        s.previous_month_transaction_amount = p.prev.txCents / 100;
        s.previous_month_transaction_count = p.prev.txCount;
      }
      rec[NETWORK_KEY[n]] = s;
    }
    yield rec;
  }
}

/** The records of a report, lazily, in order (cases by receipt time; MIDs in the world's order). */
export function selectRecords(world: World, q: ReportQuery): Generator<ReportRecord> {
  const r = normalise(q);
  if (q.kind === 'chargebacks') return chargebackRecords(world, r, q.matchOf);
  if (q.kind === 'prevention') return preventionRecords(world, r, q.matchOf);
  if (q.kind === 'mid_report') return midRecords(world, r);
  throw new ValidationError('report request', [`kind: got ${JSON.stringify(q.kind)}; expected chargebacks, prevention or mid_report`]);
}

/** The records of a report as an array (for tests and small reports; the server streams renderReport). */
export function selectReport(world: World, q: ReportQuery): ReportRecord[] {
  return Array.from(selectRecords(world, q));
}

/** A record as its CSV row: network objects flattened, lists joined by ';', null as an empty cell. */
function csvRow(kind: ReportKind, rec: ReportRecord): ReportRecord {
  if (kind === 'mid_report') return flattenMidRecord(rec);
  if (kind === 'prevention') return { ...rec, statuses: (rec.statuses as string[]).join(';') };
  return rec;
}

const NEEDS_QUOTES = /[",\r\n]/;
/** One CSV cell exactly as csv-stringify's defaults write it (RFC 4180 quoting only where needed; null and
 *  undefined empty; true as 1, false empty). Written here because csv-stringify ran much slower than JSON
 *  on a large report; a test checks the output is byte-identical to csv-stringify's. */
function csvCell(v: unknown): string {
  let s: string;
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') s = v;
  else if (typeof v === 'number') s = String(v);
  else if (typeof v === 'boolean') return v ? '1' : '';
  else s = JSON.stringify(v);
  return NEEDS_QUOTES.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** CSV lines (each ending in \n) for rows, in the given column order. */
export function csvLines(rows: readonly ReportRecord[], columns: readonly string[], header: boolean): string {
  let out = header ? columns.map(csvCell).join(',') + '\n' : '';
  for (const row of rows) {
    let line = '';
    for (let i = 0; i < columns.length; i++) line += (i ? ',' : '') + csvCell(row[columns[i]]);
    out += line + '\n';
  }
  return out;
}

export function reportContentType(format: OutputFormat | string): string {
  return String(format).toUpperCase() === 'CSV' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
}

/**
 * Renders a report as chunks of a few hundred records. JSON: one array; CSV: a header row then rows, columns
 * from REPORT_CSV_COLUMNS. No records: no chunks at all (the spec's "empty 200"). The request is checked
 * before the first chunk, so a bad one throws before the server has sent anything.
 */
export function renderReport(world: World, q: ReportQuery, format: OutputFormat | 'json' | 'csv' = 'JSON', opts: RenderOptions = {}): AsyncGenerator<string> {
  const records = selectRecords(world, q);
  const csv = String(format).toUpperCase() === 'CSV';
  const size = Math.max(1, opts.chunkRecords ?? 500);
  const columns = [...REPORT_CSV_COLUMNS[q.kind]];
  return (async function* () {
    let batch: ReportRecord[] = [];
    let first = true;
    const flush = (closing: boolean): string => {
      let out: string;
      if (csv) {
        out = csvLines(batch.map((rec) => csvRow(q.kind, rec)), columns, first);
      } else {
        out = (first ? '[' : ',') + batch.map((rec) => JSON.stringify(rec)).join(',') + (closing ? ']' : '');
      }
      first = false;
      batch = [];
      return out;
    };
    // One record of look-ahead, so the chunk holding the last record also closes the JSON array.
    let cur = records.next();
    while (!cur.done) {
      batch.push(cur.value);
      cur = records.next();
      if (batch.length >= size || cur.done) yield flush(cur.done === true);
    }
  })();
}
