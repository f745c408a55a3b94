// The tables `cbp export` writes, kept free of imports so `cbp export --help` lists them without loading DuckDB.

export interface ExportTable {
  name: string;
  about: string;
  /** SQL giving the row's UTC day (a DATE): --from/--to select by it, and the month folder comes from it. */
  day?: string;
  /** The table already has a month column (YYYY-MM): --from/--to keep the months they touch. */
  monthly?: boolean;
  /** One summary over everything (never "empty"): left out when telling whether the snapshot holds data. */
  summary?: boolean;
}

/** What `cbp export` writes by default (all of them), in this order. Names are the snapshot's own. */
export const EXPORT_TABLES: readonly ExportTable[] = [
  { name: 'mart_chargebacks', about: 'one row per chargeback case, with what the events add (by date_received)', day: 'date_received::DATE' },
  { name: 'mart_ratios', about: 'chargeback ratios per MID, network, program, metric and month, with projections', monthly: true },
  { name: 'alerts', about: 'every alert notice cbp raised (by the month it is about)', monthly: true },
  { name: 'dq_chargeback_counts', about: 'chargeback report counts against the MID report, per month', monthly: true },
  { name: 'fct_chargeback_status_changes', about: 'every observed chargeback status change (by seen_at)', day: 'seen_at::DATE' },
  { name: 'fct_prevention_status_changes', about: 'every observed prevention alert status change (by seen_at)', day: 'seen_at::DATE' },
  { name: 'int_prevention_alerts_joined', about: 'prevention alerts with their events (by date_received)', day: 'date_received::DATE' },
  { name: 'int_rdr_cases_joined', about: 'RDR cases (by rdr_date)', day: 'rdr_date' },
  { name: 'int_order_validations_joined', about: 'order validations (by order_validation_timestamp)', day: 'order_validation_timestamp::DATE' },
  { name: 'mart_prevention_outcomes', about: 'prevention alerts per MID, partner and month: completed, charged back anyway, duplicates, deflection', monthly: true },
  { name: 'mart_disputes_by_vintage', about: 'disputes by the month of the sale and the month received, with delays (by received month)', day: "strptime(received_month || '-01', '%Y-%m-%d')::DATE" },
  { name: 'mid_stats', about: 'the MID report\'s figures per report window (by window_start)', day: 'window_start' },
  { name: 'dim_mids', about: 'merchant accounts (not partitioned)' },
  { name: 'mart_event_match_rates', about: 'how well reports and events find each other (not partitioned)', summary: true },
];
