// Enrichment of matched events: a .match event names a chargeback, alert, order validation request and order
// whose details the events interface can give. Each one missing from the store is looked up once, in three
// steps, so the store is never held while the service answers: (1) read the missing ids (one short store
// step), (2) look them up with no store step open, (3) write each chunk's answers in one short transaction.
import type { Store } from '../store/db.ts';
import { missingEnrichments, saveEnrichments, type EnrichKind, type EnrichOutcome } from '../store/enrich.ts';
import { settleBounded } from '../lib/pool.ts';

/** The four lookups of the events interface (client/events.ts createEventsClient provides them). */
export interface EventLookups {
  getChargeback(guid: string): Promise<unknown>;
  getPrevention(guid: string): Promise<unknown>;
  getOrderValidation(guid: string): Promise<unknown>;
  getOrder(guid: string): Promise<unknown>;
}

const LOOKUP: Record<EnrichKind, keyof EventLookups> = {
  chargeback: 'getChargeback',
  prevention: 'getPrevention',
  order_validation: 'getOrderValidation',
  order: 'getOrder',
};

/** Runs one store step (the activities pass their store lock: each step holds it, the lookups never do). */
export type StoreStep = <T>(fn: (store: Store) => Promise<T>) => Promise<T>;

export interface EnrichOptions {
  /** The store, or a runner of store steps. */
  store: Store | StoreStep;
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

/** Answers written per transaction: a crash loses at most this many lookups (on a lake each commit costs catalog round trips). */
const CHUNK = 1000;

/** Fetches and keeps the details of matched events that are not in the store yet. Idempotent. */
export async function enrichEvents(opts: EnrichOptions): Promise<EnrichResult> {
  const store = opts.store;
  const step: StoreStep = typeof store === 'function' ? store : (fn) => fn(store);
  const now = opts.now ?? (() => new Date());
  const concurrency = Math.max(1, opts.concurrency ?? 4);
  const result: EnrichResult = {
    fetched: { chargeback: 0, prevention: 0, order_validation: 0, order: 0 },
    notFound: { chargeback: 0, prevention: 0, order_validation: 0, order: 0 },
    failed: [],
  };
  const work = await step((s) => missingEnrichments(s, opts.limit ?? 10_000));
  for (let start = 0; start < work.length; start += CHUNK) {
    const chunk = work.slice(start, start + CHUNK);
    // Every lookup of the chunk is made: one failing says nothing about the others.
    const { outcomes } = await settleBounded(chunk, concurrency, (item) => opts.events[LOOKUP[item.kind]](item.guid), { stopsOnFailure: () => false });
    const answers: EnrichOutcome[] = [];
    chunk.forEach((item, i) => {
      const o = outcomes[i];
      if (o?.ok) {
        answers.push({ ...item, found: true, payload: JSON.stringify(o.value ?? null), error: null });
        result.fetched[item.kind]++;
        return;
      }
      const error = ((o?.error as Error | undefined)?.message ?? String(o?.error)).slice(0, 500);
      if (isNotFound(o?.error)) {
        answers.push({ ...item, found: false, payload: null, error });
        result.notFound[item.kind]++;
      } else result.failed.push({ ...item, error });
    });
    await step((s) => saveEnrichments(s, answers, now()));
  }
  return result;
}
