// Errors of the analytics store, in the catalog's manner (stable CBP_ERR_* codes, see lib/errors.ts).
import { CbpError, type CbpErrorOptions } from '../lib/errors.ts';
import { sizeBytes } from '../lib/size.ts';

/** An applied migration's file changed since it ran: the store and sql/migrations disagree. */
export class MigrationChangedError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_MIGRATION_CHANGED', message);
  }
}

/** A report file cannot be loaded as the kind/format asked (not JSON, not CSV, wrong kind). Nothing was stored. */
export class BadReportFileError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_BAD_REPORT_FILE', message, opts);
  }
}

/** No snapshot has been published yet, or it cannot be opened. */
export class NoSnapshotError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_NO_SNAPSHOT', message);
  }
}

/** The store file cannot be opened (held by another writer, unreadable). Retrying later may help. */
export class StoreUnavailableError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_STORE_UNAVAILABLE', message, opts);
  }
}

/**
 * DuckDB's "Out of Memory Error" as the store's own error, for work whose size the user decides (an analyst's query):
 * what ran out, under which limit, and what to do. DuckDB's own advice (SET memory_limit, SET threads) is left out:
 * cbp's sessions cannot take it (their configuration is locked), the setting CBP_STORE_MEMORY_LIMIT can. Undefined for
 * any other error.
 */
export function outOfMemoryError(e: unknown, what: string, memoryLimit: string, narrow: string): StoreUnavailableError | undefined {
  const msg = e instanceof Error ? e.message : String(e);
  // DuckDB's own error starts so; other errors may quote the query, and the query the words.
  if (!/^Out of Memory Error:/.test(msg)) return undefined;
  const first = msg.split('\n')[0].trim();
  const twice = sizeBytes(memoryLimit) * 2;
  const more = !Number.isFinite(twice) ? 'a larger size' : twice >= 1e9 ? `${Number((twice / 1e9).toFixed(1))}GB` : `${Math.ceil(twice / 1e6)}MB`;
  return new StoreUnavailableError(
    `${what} needs more memory than the store's limit allows (${memoryLimit}, CBP_STORE_MEMORY_LIMIT): raise it for this run ` +
      `(e.g. CBP_STORE_MEMORY_LIMIT=${more}), or ${narrow}. (DuckDB: ${first})`,
    { cause: e },
  );
}
