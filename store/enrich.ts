// Enrichment of matched events: a .match event names a chargeback, alert, order validation request and order
// whose details the events interface can give. Each one missing from the enriched_* tables is fetched once and
// kept as JSON. "Does not exist" is an answer too: it is recorded (found = false) so it is not asked again on
// every run; errors that may pass (network, 5xx, 429) are not recorded, so the next run asks again.
import type { Store } from './db.ts';

/** The four lookups of the events interface (client/events.ts createEventsClient provides them). */
export interface EventLookups {
  getChargeback(guid: string): Promise<unknown>;
  getPrevention(guid: string): Promise<unknown>;
  getOrderValidation(guid: string): Promise<unknown>;
  getOrder(guid: string): Promise<unknown>;
}

export type EnrichKind = 'chargeback' | 'prevention' | 'order_validation' | 'order';

const TARGETS: Record<EnrichKind, { table: string; key: string; lookup: keyof EventLookups; sources: Array<[string, string]> }> = {
  chargeback: { table: 'enriched_chargebacks', key: 'chargeback_guid', lookup: 'getChargeback', sources: [['stg_events__chargeback_match', 'chargeback_guid']] },
  prevention: { table: 'enriched_preventions', key: 'prevention_guid', lookup: 'getPrevention', sources: [['stg_events__prevention_match', 'prevention_guid']] },
  order_validation: {
    table: 'enriched_order_validations',
    key: 'order_validation_guid',
    lookup: 'getOrderValidation',
    sources: [['stg_events__order_validation_match', 'order_validation_guid']],
  },
  order: {
    table: 'enriched_orders',
    key: 'order_guid',
    lookup: 'getOrder',
    sources: [
      ['stg_events__chargeback_match', 'order_guid'],
      ['stg_events__prevention_match', 'order_guid'],
      ['stg_events__order_validation_match', 'order_guid'],
      ['stg_events__rdr_match', 'order_guid'],
    ],
  },
};

export interface EnrichOptions {
  store: Store;
  events: EventLookups;
  /** Lookups in flight at once. Default 4. */
  concurrency?: number;
  /** Most lookups in one run (the rest wait for the next run). Default 10,000. */
  limit?: number;
  now?: () => Date;
}

export interface EnrichResult {
  fetched: Record<EnrichKind, number>;
  notFound: Record<EnrichKind, number>;
  /** Lookups that failed with an error that may pass; asked again next run. */
  failed: Array<{ kind: EnrichKind; guid: string; error: string }>;
}

/**
 * "The requested data entity does not exist" has no status of its own in the spec: 404, and any other
 * non-retryable client error of a lookup (400, 410, 422) except a credential problem, count as not found.
 */
export function isNotFound(e: unknown): boolean {
  const err = e as { httpStatus?: number; status?: number; code?: string; retryable?: boolean };
  if (err?.code === 'CBP_ERR_NOT_FOUND' || err?.code === 'CBP_ERR_SERVICE_NOT_FOUND') return true;
  const s = err?.httpStatus;
  if (typeof s !== 'number') return false;
  return s === 404 || (s >= 400 && s < 500 && ![401, 403, 408, 429].includes(s) && err.retryable !== true);
}

interface Outcome {
  kind: EnrichKind;
  guid: string;
  found: boolean;
  payload: string | null;
  error: string | null;
}

async function missing(store: Store, kind: EnrichKind, limit: number): Promise<string[]> {
  const t = TARGETS[kind];
  const union = t.sources.map(([view, col]) => `SELECT ${col} AS guid FROM ${view} WHERE ${col} IS NOT NULL`).join(' UNION ');
  const rows = await store.all<{ guid: string }>(
    `SELECT DISTINCT s.guid FROM (${union}) s ANTI JOIN ${t.table} e ON e.${t.key} = s.guid ORDER BY s.guid LIMIT ${Math.max(0, Math.floor(limit))}`,
  );
  return rows.map((r) => r.guid);
}

async function save(store: Store, outcomes: Outcome[], at: Date): Promise<void> {
  if (!outcomes.length) return;
  const stamp = at.toISOString().replace('T', ' ').replace('Z', '');
  await store.transaction(async (s) => {
    for (const kind of Object.keys(TARGETS) as EnrichKind[]) {
      const rows = outcomes.filter((o) => o.kind === kind);
      if (!rows.length) continue;
      const t = TARGETS[kind];
      const params: Array<string | boolean | null> = [];
      const values = rows.map((o) => {
        params.push(o.guid, o.found, o.payload, o.error);
        const n = params.length;
        return `($${n - 3}, $${n - 2}, $${n - 1}::JSON, $${n}, '${stamp}'::TIMESTAMP)`;
      });
      await s.run(`INSERT INTO ${t.table} (${t.key}, found, payload, error, fetched_at) VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`, params);
    }
  });
}

/** Fetches and keeps the details of matched events that are not in the store yet. Idempotent. */
export async function enrichEvents(opts: EnrichOptions): Promise<EnrichResult> {
  const now = opts.now ?? (() => new Date());
  const concurrency = Math.max(1, opts.concurrency ?? 4);
  let budget = opts.limit ?? 10_000;
  const result: EnrichResult = {
    fetched: { chargeback: 0, prevention: 0, order_validation: 0, order: 0 },
    notFound: { chargeback: 0, prevention: 0, order_validation: 0, order: 0 },
    failed: [],
  };
  const work: Array<{ kind: EnrichKind; guid: string }> = [];
  for (const kind of Object.keys(TARGETS) as EnrichKind[]) {
    const guids = await missing(opts.store, kind, budget);
    budget -= guids.length;
    for (const guid of guids) work.push({ kind, guid });
  }
  const CHUNK = 100;
  for (let start = 0; start < work.length; start += CHUNK) {
    const chunk = work.slice(start, start + CHUNK);
    const outcomes: Outcome[] = [];
    let next = 0;
    const worker = async () => {
      while (next < chunk.length) {
        const item = chunk[next++];
        const lookup = opts.events[TARGETS[item.kind].lookup].bind(opts.events);
        try {
          const value = await lookup(item.guid);
          outcomes.push({ ...item, found: true, payload: JSON.stringify(value ?? null), error: null });
          result.fetched[item.kind]++;
        } catch (e) {
          if (isNotFound(e)) {
            outcomes.push({ ...item, found: false, payload: null, error: (e as Error).message.slice(0, 500) });
            result.notFound[item.kind]++;
          } else {
            result.failed.push({ ...item, error: (e as Error).message.slice(0, 500) });
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, chunk.length) }, worker));
    await save(opts.store, outcomes, now());
  }
  return result;
}
