// Errors of the analytics store, in the catalog's manner (stable CBP_ERR_* codes, see lib/errors.ts).
import { CbpError, type CbpErrorOptions } from '../lib/errors.ts';

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

/** An analyst's query failed in DuckDB (parser, binder, conversion): exit 1, as any failure. */
export class QueryError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_QUERY', message, opts);
  }
}

/** The store lists data it cannot read (a lake's data file gone): retrying cannot help; a backup can. */
export class StoreDamagedError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_STORE_DAMAGED', message, opts);
  }
}

/** The store file cannot be opened (held by another writer, unreadable). Retrying later may help. */
export class StoreUnavailableError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_STORE_UNAVAILABLE', message, opts);
  }
}

/** The store file is held by another process (DuckDB's lock): a run or the worker. */
export class StoreHeldError extends StoreUnavailableError {}
