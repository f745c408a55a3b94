// What a Temporal history may carry (issue #12, "No personal data or bulk data in workflow history"): every
// payload of it decoded (workflow input and result, activity inputs and results, memo, search attributes,
// headers, continue-as-new inputs, failure details), and checked: no order field (names, addresses, e-mails,
// IPs, card digits, as contract/orders.ts names them), no credential, no payload over 64 KiB. Works on the
// JSON form of a history (historyToJSON, and the recorded fixtures in test/fixtures/histories/).
import { FulfillmentSchema, MerchantOrderSchema, ShipmentSchema } from '../../contract/orders.ts';

/** Temporal warns at 512 KB; cbp's own rule is a tenth of that, so nothing bulk ever rides in history. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;

/** Keys of a merchant order that identify a person or a card; order_id and currency say nothing about anyone. */
export const ORDER_FIELD_KEYS: ReadonlySet<string> = new Set(
  [...Object.keys(MerchantOrderSchema.shape), ...Object.keys(ShipmentSchema.shape), ...Object.keys(FulfillmentSchema.shape)].filter(
    (k) => !['order_id', 'currency', 'order_total', 'order_date', 'order_status'].includes(k),
  ),
);

export interface DecodedPayload {
  /** Where in the history: event id and type, then the path inside the event. */
  where: string;
  encoding: string;
  /** Size of the payload's data as stored, in bytes. */
  bytes: number;
  /** The decoded value (JSON payloads), or the data as text. */
  value: unknown;
}

const fromB64 = (s: unknown) => (typeof s === 'string' ? Buffer.from(s, 'base64') : Buffer.alloc(0));

function isPayload(v: unknown): v is { metadata: Record<string, string>; data?: string } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const m = (v as { metadata?: unknown }).metadata;
  return typeof m === 'object' && m !== null && typeof (m as { encoding?: unknown }).encoding === 'string';
}

function decode(p: { metadata: Record<string, string>; data?: string }): { encoding: string; bytes: number; value: unknown } {
  const encoding = fromB64(p.metadata.encoding).toString('utf8');
  const data = fromB64(p.data);
  let value: unknown = data.toString('utf8');
  if (encoding === 'json/plain') value = data.length ? JSON.parse(data.toString('utf8')) : null;
  else if (encoding === 'binary/null') value = null;
  return { encoding, bytes: data.length, value };
}

interface HistoryJson {
  events: Array<Record<string, unknown> & { eventId?: unknown; eventType?: unknown }>;
}

function asHistory(h: unknown): HistoryJson {
  const parsed = typeof h === 'string' ? (JSON.parse(h) as unknown) : h;
  if (!parsed || !Array.isArray((parsed as HistoryJson).events)) throw new Error('not a history in JSON form (an object with events[])');
  return parsed as HistoryJson;
}

/** Every payload of the history, decoded, with where it was found. */
export function historyPayloads(history: unknown): DecodedPayload[] {
  const out: DecodedPayload[] = [];
  const walk = (v: unknown, where: string) => {
    if (isPayload(v)) {
      out.push({ where, ...decode(v) });
      return;
    }
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${where}[${i}]`));
    else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) walk(x, `${where}.${k}`);
  };
  for (const e of asHistory(history).events) walk(e, `event ${String(e.eventId)} ${String(e.eventType)}`);
  return out;
}

/** The history with every payload replaced by its decoded value: what a person reading it would see. */
export function readableHistory(history: unknown): unknown {
  const walk = (v: unknown): unknown => {
    if (isPayload(v)) return decode(v).value;
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(asHistory(history));
}

function keysOf(v: unknown, out: Set<string> = new Set()): Set<string> {
  if (Array.isArray(v)) for (const x of v) keysOf(x, out);
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      keysOf(x, out);
    }
  }
  return out;
}

export interface PayloadRules {
  /** Values that must appear nowhere (credentials, planted personal data); shorter than 4 characters are ignored. */
  forbidden?: readonly string[];
  maxBytes?: number;
}

/**
 * What breaks the rules in one value that crosses into history (a decoded payload, or what a local run passed
 * to or got from an activity): its size, order fields among its keys, forbidden values in its text.
 */
export function valueViolations(where: string, value: unknown, rules: PayloadRules = {}, bytes?: number): string[] {
  const max = rules.maxBytes ?? MAX_PAYLOAD_BYTES;
  const out: string[] = [];
  const text = JSON.stringify(value) ?? '';
  const size = bytes ?? Buffer.byteLength(text);
  if (size > max) out.push(`${where}: payload of ${size} bytes (over ${max})`);
  for (const k of keysOf(value)) if (ORDER_FIELD_KEYS.has(k)) out.push(`${where}: holds the order field ${k}`);
  for (const s of forbiddenOf(rules)) if (text.includes(s)) out.push(`${where}: ${describeForbidden(s)}`);
  return out;
}

const forbiddenOf = (rules: PayloadRules) => (rules.forbidden ?? []).filter((s) => s.length >= 4);
// Never the value itself: it may be a credential.
const describeForbidden = (s: string) => `holds a forbidden value (${s.length} characters, starting ${JSON.stringify(s.slice(0, 2))})`;

/** What breaks the rules in a history, one line each (empty: the history is clean). */
export function payloadViolations(history: unknown, rules: PayloadRules = {}): string[] {
  const out: string[] = [];
  for (const p of historyPayloads(history)) out.push(...valueViolations(p.where, p.value, rules, p.bytes));
  // Everything else too (failure messages, identities, ...), with the payloads decoded, and as stored.
  const text = JSON.stringify(readableHistory(history));
  const raw = typeof history === 'string' ? history : JSON.stringify(history);
  for (const s of forbiddenOf(rules)) if (text.includes(s) || raw.includes(s)) out.push(`the history ${describeForbidden(s)}`);
  return [...new Set(out)];
}
