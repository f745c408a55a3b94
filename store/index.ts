// The analytics store's public surface. Other parts import from here (or the module itself).
export { openStore, DEFAULT_MIGRATIONS_DIR, DEFAULT_VIEWS_DIR, type Store, type StoreOptions, type Params, type Row } from './db.ts';
export { applySchema, readMigrations, type MigrateResult, type MigrationFile } from './migrate.ts';
export { fetchReport, importReport, landingPath, readMeta, metaPath, midsHash, type LandingMeta, type LandingDeps, type FetchWindow, type ReportDownloader } from './landing.ts';
export { loadReport, normaliseWindow, type LoadOptions, type LoadResult, type Window, type FileFormat } from './load.ts';
export { publishSnapshot, openSnapshot, type SnapshotResult } from './snapshot.ts';
export { BadReportFileError, MigrationChangedError, NoSnapshotError, StoreUnavailableError } from './errors.ts';
export {
  ownSubscriptions,
  recordOwnSubscriptions,
  noteListedSubscriptions,
  markSubscriptionsSeenActive,
  markSubscriptionDeleted,
  type OwnSubscription,
  type OwnOrigin,
  type ListedSubscription,
} from './subscriptions.ts';
