// The store's side of enrichment: which matched events' details are missing from the enriched_* tables, and
// writing what the lookups answered. No service call happens here: the enrich activity (activities/enrich.ts)
// reads the missing ids, asks the events interface with no store lock held, then writes the answers.
// "Does not exist" is an answer too: it is recorded (found = false) so it is not asked again on every run;
// lookups that failed in a way that may pass are not recorded, so the next run asks again.
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';
import { jsonParam, jsonRows } from './insert-rows.ts';
import { sqlTimestamp } from '../lib/utc.ts';

export type EnrichKind = 'chargeback' | 'prevention' | 'order_validation' | 'order';

/** In the order the missing ids are read (and the lookup budget spent). */
export const ENRICH_KINDS: readonly EnrichKind[] = ['chargeback', 'prevention', 'order_validation', 'order'];

const TARGETS: Record<EnrichKind, { table: string; key: string; sources: Array<[string, string]> }> = {
  chargeback: { table: 'enriched_chargebacks', key: 'chargeback_guid', sources: [['stg_events__chargeback_match', 'chargeback_guid']] },
  prevention: { table: 'enriched_preventions', key: 'prevention_guid', sources: [['stg_events__prevention_match', 'prevention_guid']] },
  order_validation: {
    table: 'enriched_order_validations',
    key: 'order_validation_guid',
    sources: [['stg_events__order_validation_match', 'order_validation_guid']],
  },
  order: {
    table: 'enriched_orders',
    key: 'order_guid',
    sources: [
      ['stg_events__chargeback_match', 'order_guid'],
      ['stg_events__prevention_match', 'order_guid'],
      ['stg_events__order_validation_match', 'order_guid'],
      ['stg_events__rdr_match', 'order_guid'],
    ],
  },
};

/** One detail to look up. */
export interface EnrichItem {
  kind: EnrichKind;
  guid: string;
}

/** A lookup's answer as stored: found with its payload (JSON text), or not found with the service's message. */
export interface EnrichOutcome extends EnrichItem {
  found: boolean;
  payload: string | null;
  error: string | null;
}

/**
 * The details matched events name that the store does not hold yet, at most `limit` in all: every missing
 * chargeback first, then preventions, order validations and orders, each sorted by guid.
 */
export async function missingEnrichments(store: Store, limit: number): Promise<EnrichItem[]> {
  const out: EnrichItem[] = [];
  for (const kind of ENRICH_KINDS) {
    const t = TARGETS[kind];
    const union = t.sources.map(([view, col]) => `SELECT ${col} AS guid FROM ${view} WHERE ${col} IS NOT NULL`).join(' UNION ');
    const rows = await store.all<{ guid: string }>(
      `SELECT DISTINCT s.guid FROM (${union}) s ANTI JOIN ${t.table} e ON e.${t.key} = s.guid ORDER BY s.guid LIMIT ${Math.max(0, Math.floor(limit - out.length))}`,
    );
    for (const r of rows) out.push({ kind, guid: r.guid });
  }
  return out;
}

/** Writes lookup answers in one transaction. A detail already stored keeps its first answer. */
export async function saveEnrichments(store: Store, outcomes: readonly EnrichOutcome[], at: Date): Promise<void> {
  if (!outcomes.length) return;
  const stamp = sqlTimestamp(at);
  await store.transaction(async (s) => {
    for (const kind of ENRICH_KINDS) {
      const rows = outcomes.filter((o) => o.kind === kind);
      if (!rows.length) continue;
      const t = TARGETS[kind];
      const values = rows.map((o) => [o.guid, o.found, o.payload, o.error, stamp]);
      const select = jsonRows(5, ['', '::BOOLEAN', '::JSON', '', '::TIMESTAMP']);
      await s.run(upsertSql(s, { into: t.table, columns: [t.key, 'found', 'payload', 'error', 'fetched_at'], rows: select, key: [t.key] }), [jsonParam(values)]);
    }
  });
}
