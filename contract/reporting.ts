// The reporting interface: the request body, and chargeback, prevention and MID records.
// One schema per record parses both a JSON record and a CSV row (strings everywhere, MID network objects
// flattened into prefixed columns), so every report lands in the same shape whatever its format.
import { z } from 'zod';
import { BRAND_ALIASES, amount, brandKey, cardBrand, count, currency, dateTime, dateTimeOrDate, float, id, opt, text, toIsoUtc } from './common.ts';

export const REPORT_KINDS = ['chargebacks', 'prevention', 'mid_report'] as const;
export type ReportKind = (typeof REPORT_KINDS)[number];
export const ReportKindSchema = z.enum(REPORT_KINDS, {
  error: (i) => `expected a report kind: chargebacks, prevention or mid_report, got ${JSON.stringify(i.input)}`,
});

export const OUTPUT_FORMATS = ['JSON', 'CSV'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];
export const OutputFormatSchema = z
  .string()
  .transform((v) => v.trim().toUpperCase())
  .pipe(z.enum(OUTPUT_FORMATS, { error: (i) => `expected JSON or CSV, got ${JSON.stringify(i.input)}` }));

/** Request body, the same for the three reports. */
export const ReportRequestSchema = z
  .looseObject({
    start_date: dateTime,
    end_date: dateTime,
    company_token: z.string().min(1, 'expected the company token'),
    mids: z.array(id).optional(),
    output_format: OutputFormatSchema.optional(),
  })
  .refine((r) => r.start_date <= r.end_date, { message: 'expected start_date at or before end_date', path: ['end_date'] });
export type ReportRequest = z.infer<typeof ReportRequestSchema>;

/** How cbp writes a report date-time on the wire: the documentation examples' `YYYY-MM-DD HH:MM:SS`. */
export function reportDateTime(isoOrDate: string): string {
  const iso = toIsoUtc(isoOrDate, true);
  if (!iso) throw new Error(`not a date-time: ${isoOrDate}`);
  return iso.replace('T', ' ').replace('Z', '');
}

export const CHARGEBACK_STATUSES = ['Lost', 'New', 'Pending', 'Won', 'Did Not Fight', 'Pre-Arbitration', 'Result Unobtainable'] as const;
export type ChargebackStatus = (typeof CHARGEBACK_STATUSES)[number];
const chargebackStatus = z
  .string()
  .transform((v) => CHARGEBACK_STATUSES.find((s) => s.toLowerCase() === v.trim().toLowerCase().replace(/[_]+/g, ' ')) ?? v)
  .pipe(z.enum(CHARGEBACK_STATUSES, { error: (i) => `expected a chargeback status (${CHARGEBACK_STATUSES.join(', ')}), got ${JSON.stringify(i.input)}` }));

export const CHARGEBACK_COLUMNS = [
  'case_number', 'status', 'arn', 'mid', 'card_number', 'card_type', 'amount', 'currency', 'reason_code', 'reason',
  'date_received', 'transaction_date', 'order_id', 'name', 'tracking_number',
] as const;

export const ChargebackRecordSchema = z.looseObject({
  case_number: id,
  status: chargebackStatus,
  arn: opt(text),
  mid: id,
  card_number: opt(text),
  card_type: opt(cardBrand),
  amount,
  currency: opt(currency),
  reason_code: opt(text),
  reason: opt(text),
  date_received: opt(dateTimeOrDate),
  transaction_date: opt(dateTimeOrDate),
  order_id: opt(text),
  name: opt(text),
  tracking_number: opt(text),
});
export type ChargebackRecord = z.infer<typeof ChargebackRecordSchema>;

export const PREVENTION_STATUSES = ['New', 'Pending', 'Complete'] as const;
const preventionStatus = z
  .string()
  .transform((v) => PREVENTION_STATUSES.find((s) => s.toLowerCase() === v.trim().toLowerCase()) ?? v)
  .pipe(z.enum(PREVENTION_STATUSES, { error: (i) => `expected New, Pending or Complete, got ${JSON.stringify(i.input)}` }));

/** An array, or in a CSV cell a list joined by ";" (a JSON array text is accepted too). */
export function listCell(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const s = v.trim();
  if (s === '') return [];
  if (s.startsWith('[')) {
    try {
      return JSON.parse(s);
    } catch {
      return v;
    }
  }
  return s.split(';').map((x) => x.trim()).filter(Boolean);
}

export const SOURCE_PARTNERS = ['Ethoca', 'Verifi'] as const;

export const PREVENTION_COLUMNS = [
  'arn', 'alert_case_id', 'statuses', 'mid', 'merchant_descriptor', 'source_partner', 'bin', 'last_four', 'amount',
  'currency', 'date_received', 'transaction_date', 'order_id', 'name',
] as const;

export const PreventionRecordSchema = z.looseObject({
  arn: opt(text),
  alert_case_id: id,
  statuses: z.preprocess(listCell, z.array(preventionStatus)),
  mid: opt(id),
  merchant_descriptor: opt(text),
  source_partner: z
    .string()
    .transform((v) => SOURCE_PARTNERS.find((s) => s.toLowerCase() === v.trim().toLowerCase()) ?? v)
    .pipe(z.enum(SOURCE_PARTNERS, { error: (i) => `expected Ethoca or Verifi, got ${JSON.stringify(i.input)}` })),
  bin: opt(text),
  last_four: opt(text),
  amount,
  currency: opt(currency),
  date_received: opt(dateTimeOrDate),
  transaction_date: opt(dateTimeOrDate),
  order_id: opt(text),
  name: opt(text),
});
export type PreventionRecord = z.infer<typeof PreventionRecordSchema>;

/** The six figures of a MID record, for all networks together or for one. Ratios are empty without transactions. */
const statFields = {
  chargeback_amount_ratio: z.preprocess((v) => (v === '' ? null : v), float.nullable()),
  chargeback_amount: amount,
  chargeback_count: count,
  chargeback_ratio: z.preprocess((v) => (v === '' ? null : v), float.nullable()),
  transaction_amount: amount,
  transaction_count: count,
};
export const STAT_FIELDS = Object.keys(statFields) as Array<keyof typeof statFields>;

export const NetworkStatsSchema = z.looseObject(statFields);
export type NetworkStats = z.infer<typeof NetworkStatsSchema>;
export const MasterCardStatsSchema = z.looseObject({
  ...statFields,
  previous_month_transaction_amount: z.preprocess((v) => (v === '' ? null : v), amount.nullable().optional()),
  previous_month_transaction_count: z.preprocess((v) => (v === '' ? null : v), count.nullable().optional()),
});
export type MasterCardStats = z.infer<typeof MasterCardStatsSchema>;

/** MID record network keys. */
export const MID_NETWORK_KEYS = ['visa', 'master_card', 'discover', 'amex'] as const;
export type MidNetworkKey = (typeof MID_NETWORK_KEYS)[number];
/** The network names cbp uses everywhere else, for each MID record key. */
export const MID_KEY_NETWORK = { visa: 'visa', master_card: 'mastercard', discover: 'discover', amex: 'american_express' } as const;
/** Every spelling of a MID record key: the contract's brand spellings (BRAND_ALIASES) of its network. */
export const MID_KEY_SPELLINGS: Readonly<Record<MidNetworkKey, string[]>> = Object.fromEntries(
  MID_NETWORK_KEYS.map((k) => [k, [k, ...Object.keys(BRAND_ALIASES).filter((a) => a !== k && BRAND_ALIASES[a] === MID_KEY_NETWORK[k])]]),
) as Record<MidNetworkKey, string[]>;
const NETWORK_KEY_ALIASES: Record<string, MidNetworkKey> = Object.fromEntries(
  MID_NETWORK_KEYS.flatMap((k) => MID_KEY_SPELLINGS[k].map((a) => [a, k])),
);

export const MID_CSV_COLUMNS: string[] = [
  'mid',
  'alias',
  'gateways',
  ...STAT_FIELDS,
  ...MID_NETWORK_KEYS.flatMap((k) => [
    ...STAT_FIELDS.map((f) => `${k}_${f}`),
    ...(k === 'master_card' ? ['master_card_previous_month_transaction_amount', 'master_card_previous_month_transaction_count'] : []),
  ]),
];

/** Folds prefixed CSV columns (visa_chargeback_count, ...) back into network objects; renames key spellings. */
export function unflattenMidRow(v: unknown): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, val] of Object.entries(src)) {
    const canon = Object.hasOwn(NETWORK_KEY_ALIASES, brandKey(k)) ? NETWORK_KEY_ALIASES[brandKey(k)] : undefined;
    // A null network object is "no figures given", the same as an absent one.
    if (canon && val === null) continue;
    if (canon && typeof val === 'object') out[canon] = val;
    else out[k] = val;
  }
  for (const key of MID_NETWORK_KEYS) {
    if (out[key] !== undefined) continue;
    const prefix = `${key}_`;
    const obj: Record<string, unknown> = {};
    for (const k of Object.keys(out)) {
      if (k.startsWith(prefix)) {
        obj[k.slice(prefix.length)] = out[k];
        delete out[k];
      }
    }
    // A CSV row has every column; a network with no figures has all its cells empty, and must stay absent
    // as it would in JSON rather than fail as empty amounts.
    if (Object.values(obj).some((x) => x !== '' && x !== null && x !== undefined)) out[key] = obj;
  }
  return out;
}

/** The CSV row of a MID record: network objects flattened into `<network>_<field>` columns. */
export function flattenMidRecord(r: Record<string, unknown>): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) {
    if ((MID_NETWORK_KEYS as readonly string[]).includes(k) && v && typeof v === 'object') {
      for (const [f, fv] of Object.entries(v as Record<string, unknown>)) row[`${k}_${f}`] = fv;
    } else if (k === 'gateways' && Array.isArray(v)) row[k] = v.join(';');
    else row[k] = v;
  }
  return row;
}

export const MidRecordSchema = z.preprocess(
  unflattenMidRow,
  z.looseObject({
    mid: id,
    alias: opt(text),
    gateways: z.preprocess(listCell, z.array(text)).optional(),
    ...statFields,
    // An absent network object means "no figures given", kept apart from zero figures.
    visa: NetworkStatsSchema.optional(),
    master_card: MasterCardStatsSchema.optional(),
    discover: NetworkStatsSchema.optional(),
    amex: NetworkStatsSchema.optional(),
  }),
);
export type MidRecord = z.infer<typeof MidRecordSchema>;

export const RECORD_SCHEMAS = {
  chargebacks: ChargebackRecordSchema,
  prevention: PreventionRecordSchema,
  mid_report: MidRecordSchema,
} as const;

export const REPORT_CSV_COLUMNS: Record<ReportKind, readonly string[]> = {
  chargebacks: CHARGEBACK_COLUMNS,
  prevention: PREVENTION_COLUMNS,
  mid_report: MID_CSV_COLUMNS,
};
