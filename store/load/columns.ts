// Raw columns per report kind, and how a JSON record or CSV header supplies them. Every one is read as text
// (VARCHAR) and typed by the staging SELECT (stage.ts).
import { CHARGEBACK_COLUMNS, MID_KEY_SPELLINGS, MID_NETWORK_KEYS, PREVENTION_COLUMNS, STAT_FIELDS, type ReportKind } from '../../contract/reporting.ts';

/** Figures only Mastercard's object has. */
export const MC_EXTRA = ['previous_month_transaction_amount', 'previous_month_transaction_count'];
export const netFields = (k: string) => [...STAT_FIELDS, ...(k === 'master_card' ? MC_EXTRA : [])];
const MID_FLAT_COLUMNS = MID_NETWORK_KEYS.flatMap((k) => netFields(k).map((f) => `${k}_${f}`));
const MID_RAW_COLUMNS = ['mid', 'alias', 'gateways', ...STAT_FIELDS, ...MID_FLAT_COLUMNS];
const MID_OBJECT_COLUMNS = Object.values(MID_KEY_SPELLINGS).flat();

export const RAW_COLUMNS: Record<ReportKind, string[]> = {
  chargebacks: [...CHARGEBACK_COLUMNS],
  prevention: [...PREVENTION_COLUMNS],
  mid_report: [...MID_RAW_COLUMNS, ...MID_OBJECT_COLUMNS],
};
/** Columns only this kind has: a file with none of them is another kind's report. */
export const DISTINCTIVE: Record<ReportKind, string[]> = {
  chargebacks: ['case_number', 'status', 'card_number', 'card_type', 'reason_code', 'reason', 'tracking_number'],
  prevention: ['alert_case_id', 'statuses', 'source_partner', 'merchant_descriptor', 'bin', 'last_four'],
  mid_report: ['alias', 'gateways', ...STAT_FIELDS, ...MID_OBJECT_COLUMNS, ...MID_FLAT_COLUMNS],
};
/** Columns every row needs (a CSV header without one is refused before any row). */
export const REQUIRED: Record<ReportKind, string[]> = {
  chargebacks: ['case_number', 'mid', 'status', 'amount', 'date_received'],
  prevention: ['alert_case_id', 'statuses', 'source_partner', 'amount'],
  mid_report: ['mid', ...STAT_FIELDS.filter((f) => !f.endsWith('_ratio'))],
};
/** A CSV header must name the kind's identity column. */
export const CSV_IDENTITY: Record<ReportKind, string> = { chargebacks: 'case_number', prevention: 'alert_case_id', mid_report: 'mid' };

/** The message for a file none of whose records has a column of its kind. */
export const otherKind = (shown: string, kind: ReportKind, records: number | string) =>
  `${shown} is not a ${kind} report: none of its ${records} records has any of ${DISTINCTIVE[kind].slice(0, 4).join(', ')}, … (another report kind?)`;
