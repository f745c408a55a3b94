// What every group of activities shares: their dependencies, the defaults read from the configuration, and
// the store lock.
//
// The store has ONE writer. The local runner opens it once per run and passes it in (`store`); the Temporal
// worker passes an opener (`openStore`) that holds one store per worker process (see sharedStore below),
// opened on first use and closed when the worker stops. Inside one process every store step goes through
// one lock, so a load's staging statements never interleave with another activity's transaction on the
// shared connection; downloads and service calls run outside it.
import type { Logger } from 'pino';
import { configuredStore } from '../store/lake.ts';
import type { Config } from '../lib/config.ts';
import { CbpError } from '../lib/errors.ts';
import { serialQueue } from '../lib/serial.ts';
import type { ServiceClients } from '../client/index.ts';
import type { Store } from '../store/db.ts';
import { openStore as openStoreFile } from '../store/db.ts';
import type { Notifier } from '../alerts/notifiers/index.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import type { IngestResult as JournalLoad } from '../store/ingest.ts';

/** A store step failed in a way a later attempt may not (the file is locked, the disk is full, ...). */
export class ActivityStoreError extends CbpError {
  constructor(activity: string, cause: unknown) {
    super('CBP_ERR_ACTIVITY_STORE', `${activity}: ${(cause as Error)?.message?.split('\n')[0] ?? String(cause)}`, { cause });
  }
}

export interface ActivityDeps {
  config: Config;
  /** An open store (the local runner: one per run), or an opener (the worker: see sharedStore). */
  store: Store | (() => Promise<Store>);
  clients: ServiceClients;
  logger?: Logger;
  /** Wall clock for bookkeeping stamps (default: Date). Report windows never use it: they come from the workflow. */
  now?: () => Date;
  /** Default: notifiersFromConfig(config). */
  notifiers?: Notifier[];
  /** Default: loadRules(config.thresholdsFile). */
  rules?: RuleSet;
  /** Default config.journalDir. */
  journalDir?: string;
  /** Where landing files go. Default config.dataDir. */
  dataDir?: string;
  /** Default config.snapshotPath. */
  snapshotPath?: string;
  /** Orders pushed at once. Default 4. */
  pushConcurrency?: number;
  /** Enrichment lookups at once. Default 4. */
  enrichConcurrency?: number;
  /**
   * Sees the store's account of each journal load, segment by segment (what `cbp run ingest` prints). The
   * ingestEvents activity's result carries counts only: under Temporal it is workflow history.
   */
  onIngested?: (r: JournalLoad) => void;
}

/** One store step: `activity` names the step in an ActivityStoreError. */
export type WithStore = <T>(activity: string, fn: (store: Store) => Promise<T>) => Promise<T>;

/** What each group's factory receives: the dependencies with their defaults, and the one store lock. */
export interface ActivityContext {
  deps: ActivityDeps;
  config: Config;
  clients: ServiceClients;
  logger?: Logger;
  now: () => Date;
  dataDir: string;
  journalDir: string;
  snapshotPath: string;
  withStore: WithStore;
}

/** One store per process, opened on first use: what the Temporal worker passes as `store`. */
export function sharedStore(open: () => Promise<Store>): { get: () => Promise<Store>; peek: () => Store | undefined; close: () => void } {
  let opening: Promise<Store> | undefined;
  let store: Store | undefined;
  return {
    get() {
      opening ??= open().then(
        (s) => (store = s),
        (e) => {
          opening = undefined;
          throw e;
        },
      );
      return opening;
    },
    /** The store if open, without opening it (the worker's metrics read it only once an activity has). */
    peek: () => store,
    close() {
      store?.close();
      store = undefined;
      opening = undefined;
    },
  };
}

/** The default opener: the configured store file, migrated. */
export function storeOpener(cfg: Config): () => Promise<Store> {
  return () => openStoreFile(configuredStore(cfg));
}

/** The lock every store step of this process goes through (see the header); failures become ActivityStoreErrors. */
export function storeLock(store: ActivityDeps['store']): WithStore {
  const getStore = typeof store === 'function' ? store : async () => store;
  const queue = serialQueue();
  return <T>(activity: string, fn: (store: Store) => Promise<T>): Promise<T> =>
    queue(async () => {
      let s: Store;
      try {
        s = await getStore();
      } catch (e) {
        if (e instanceof CbpError) throw e;
        throw new ActivityStoreError(activity, e);
      }
      try {
        return await fn(s);
      } catch (e) {
        if (e instanceof CbpError) throw e;
        throw new ActivityStoreError(activity, e);
      }
    });
}

/** The context one createActivities call shares between its groups: one lock per set of activities. */
export function activityContext(deps: ActivityDeps): ActivityContext {
  const cfg = deps.config;
  const dataDir = deps.dataDir ?? cfg.dataDir;
  return {
    deps,
    config: cfg,
    clients: deps.clients,
    ...(deps.logger ? { logger: deps.logger } : {}),
    now: deps.now ?? (() => new Date()),
    dataDir,
    journalDir: deps.journalDir ?? cfg.journalDir,
    snapshotPath: deps.snapshotPath ?? cfg.snapshotPath,
    withStore: storeLock(deps.store),
  };
}
