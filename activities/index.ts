// The real activities: thin functions joining the service clients, the store, the journal and the notifiers
// behind activities/types.ts. The same object serves the local runner (called directly) and the Temporal
// worker (wrapped by worker/activity-errors.ts).
//
// The store has ONE writer. The local runner opens it once per run and passes it in (`store`); the Temporal
// worker passes an opener (`openStore`) that holds one store per worker process (see sharedStore below),
// opened on first use and closed when the worker stops. Inside one process every store step goes through
// one lock, so a load's staging statements never interleave with another activity's transaction on the
// shared connection; downloads and service calls run outside it.
import path from 'node:path';
import type { Logger } from 'pino';
import { requireSettings, secretValues, type Config } from '../lib/config.ts';
import { sameSecret } from '../lib/secrets.ts';
import { CbpError } from '../lib/errors.ts';
import type { ServiceClients } from '../client/index.ts';
import { ServiceError } from '../client/errors.ts';
import type { Store } from '../store/db.ts';
import { openStore as openStoreFile } from '../store/db.ts';
import { fetchReport } from '../store/landing.ts';
import { loadReport } from '../store/load.ts';
import { ingestEvents as ingestJournal } from '../store/ingest.ts';
import { enrichEvents } from '../store/enrich.ts';
import { publishIfBehind } from '../store/snapshot.ts';
import { doneWindowIds, recordReportFetch, recordWindowOutcome } from '../store/windows.ts';
import { evaluateAfterLoad } from '../alerts/engine.ts';
import { deliverNotices as deliverOutbox, untoldNotices } from '../alerts/outbox.ts';
import { nobodyToldWarning, notifiersFromConfig, type Notifier } from '../alerts/notifiers/index.ts';
import { log } from '../lib/log.ts';
import { loadRules, type RuleSet } from '../rules/thresholds.ts';
import { withHeartbeat } from '../worker/activity-errors.ts';
import { windowBounds, windowComplete, windowId } from '../workflows/windows.ts';
import { isOrderRefusal } from '../client/order-data.ts';
import { lastOrderPushes, recordOrderPushes, replaceInvalidOrderLines, type OrderPushRecord } from '../store/orders.ts';
import { readOrderBatch } from './orders-file.ts';
import { planOrderPushes } from './orders.ts';
import type { Subscription } from '../contract/resources.ts';
import { markSubscriptionDeleted, markSubscriptionsSeenActive, noteListedSubscriptions, recordOwnSubscriptions } from '../store/subscriptions.ts';
import { sameUrl, urlHost } from '../workflows/subscriptions.ts';
import type { Activities, PushOrderBatchInput, PushOrderBatchResult, SubscriptionList, SubscriptionView } from './types.ts';

export { readOrderBatch, orderFileFormat } from './orders-file.ts';

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
}

/** One store per process, opened on first use: what the Temporal worker passes as `store`. */
export function sharedStore(open: () => Promise<Store>): { get: () => Promise<Store>; close: () => void } {
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
    close() {
      store?.close();
      store = undefined;
      opening = undefined;
    },
  };
}

/** The default opener: the configured store file, migrated. */
export function storeOpener(cfg: Config): () => Promise<Store> {
  return () => openStoreFile({ dbPath: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
}

function sqlStamp(d: Date): string {
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

/**
 * fn over items, `limit` at a time, every outcome kept. After the first failure no further item starts (those
 * stay undefined), so a key that fails is asked for once, not once per order; started ones finish.
 */
async function mapSettled<T, R>(items: readonly T[], limit: number, signal: AbortSignal, fn: (item: T) => Promise<R>): Promise<Array<Settled<R> | undefined>> {
  const out = new Array<Settled<R> | undefined>(items.length);
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (next < items.length && !failed && !signal.aborted) {
      const i = next++;
      try {
        out[i] = { ok: true, value: await fn(items[i] as T) };
      } catch (e) {
        out[i] = { ok: false, error: e };
        if (!isOrderRefusal(e)) failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return out;
}

/** Whether the service showed a password for this subscription (the spec says it does; it may not). */
function showsPassword(sub: Subscription): boolean {
  const pw = (sub.auth as { password?: unknown } | undefined)?.password;
  return typeof pw === 'string' && pw !== '';
}

/**
 * A subscription as the workflow may see it (its input and output are recorded in Temporal's history): the
 * spec's fields, and of the credentials the username and whether the service's password equals `configured`.
 * Without `configured` the comparison is left out (unknown), never guessed.
 */
export function subscriptionView(sub: Subscription, configured: string | undefined): SubscriptionView {
  const view: SubscriptionView = {
    guid: sub.guid,
    email: sub.email,
    url: sub.url,
    event_type: sub.event_type,
    active: sub.active,
    created_at: sub.created_at,
    updated_at: sub.updated_at,
  };
  // Looser than the schema on purpose: a service that omits or blanks a part must not make the view lie.
  const auth = sub.auth as { username?: unknown; password?: unknown } | undefined;
  if (auth && typeof auth === 'object') {
    view.auth = {
      ...(typeof auth.username === 'string' ? { username: auth.username } : {}),
      ...(typeof auth.password === 'string' && auth.password !== '' && configured !== undefined
        ? { password_matches: sameSecret(auth.password, configured) }
        : {}),
    };
  }
  return view;
}

export function createActivities(deps: ActivityDeps): Activities {
  const cfg = deps.config;
  const now = deps.now ?? (() => new Date());
  const dataDir = deps.dataDir ?? cfg.dataDir;
  const journalDir = deps.journalDir ?? (cfg.journalDir as string | undefined) ?? path.join(dataDir, 'journal');
  const snapshotPath = deps.snapshotPath ?? cfg.snapshotPath;
  let rules = deps.rules;
  let notifiers = deps.notifiers;
  const getStore = typeof deps.store === 'function' ? deps.store : ((s: Store) => async () => s)(deps.store);

  // Read when needed, not at creation: a worker without it still runs every other activity. ConfigError is
  // not retryable (CBP_ERR_CONFIG): a retry cannot set an environment variable.
  const webhookPassword = (): string => {
    requireSettings(cfg, ['webhookPassword'], 'the webhook subscription activities (the password the service pushes events with)');
    return cfg.webhookPassword as string;
  };
  const configuredPassword = (): string | undefined =>
    typeof cfg.webhookPassword === 'string' && cfg.webhookPassword !== '' ? cfg.webhookPassword : undefined;

  // One lock for every store step of this process (see the header).
  let tail: Promise<unknown> = Promise.resolve();
  function withStore<T>(activity: string, fn: (store: Store) => Promise<T>): Promise<T> {
    const run = tail.then(async () => {
      let store: Store;
      try {
        store = await getStore();
      } catch (e) {
        if (e instanceof CbpError) throw e;
        throw new ActivityStoreError(activity, e);
      }
      try {
        return await fn(store);
      } catch (e) {
        if (e instanceof CbpError) throw e;
        throw new ActivityStoreError(activity, e);
      }
    });
    tail = run.catch(() => undefined);
    return run;
  }

  /** A store note after a service call that already acted: logged when it fails, never thrown (see createSubscription). */
  async function remember(activity: string, guid: string, fn: (store: Store) => Promise<void>): Promise<void> {
    try {
      await withStore(activity, fn);
    } catch (e) {
      deps.logger?.warn({ activity, guid, err: (e as Error)?.message?.split('\n')[0] }, 'could not record the subscription in the store');
    }
  }

  /** See OrderActivities.pushOrderBatch. Orders stay inside this function: only counts and a cursor leave it. */
  async function pushOrderBatch(input: PushOrderBatchInput, signal: AbortSignal): Promise<PushOrderBatchResult> {
    const { source, cursor, batchSize, pushBatchSize, runId } = input;
    const batch = await readOrderBatch(source, cursor, batchSize);
    const src = path.resolve(source);
    await withStore('pushOrderBatch', (store) =>
      replaceInvalidOrderLines(store, { source: src, firstLine: batch.firstLine, lastLine: batch.lastLine, lines: batch.invalid, runId, at: now() }),
    );
    const rows = await withStore('pushOrderBatch', (store) => lastOrderPushes(store, batch.orders.map((r) => r.order.order_id)));
    const known = new Map([...rows].map(([id, r]) => [id, { hash: r.hash, status: r.status, runId: r.run_id, line: r.source_line, change: r.change }]));
    const plan = planOrderPushes(batch.orders, known, { runId, retryRejected: input.retryRejected === true });
    const out: PushOrderBatchResult = {
      records: batch.records,
      new: plan.counts.earlier.new,
      changed: plan.counts.earlier.changed,
      retried: plan.counts.earlier.retried,
      unchanged: plan.counts.unchanged,
      stillRejected: plan.counts.stillRejected,
      rejected: plan.counts.earlier.rejected,
      invalid: batch.invalid.length,
      repeated: plan.counts.repeated,
      next: batch.next,
    };
    const client = deps.clients.data;
    for (let i = 0; i < plan.push.length; i += pushBatchSize) {
      const slice = plan.push.slice(i, i + pushBatchSize);
      const settled = await mapSettled(slice, deps.pushConcurrency ?? 4, signal, async (p) => client.pushOrder(p.order, { signal }));
      const records: OrderPushRecord[] = [];
      let failure: { error: unknown } | undefined;
      settled.forEach((r, j) => {
        const p = slice[j]!;
        const base = { order_id: p.order.order_id, hash: p.hash, change: p.change, line: p.line, runId };
        if (r === undefined) return; // not attempted: a lane failed first
        if (r.ok) {
          out[p.change]++;
          records.push({ ...base, status: 'pushed', serviceId: r.value.id });
          return;
        }
        const refused = isOrderRefusal(r.error);
        if (refused) {
          out.rejected++;
          records.push({ ...base, status: 'rejected', httpStatus: refused.status, message: refused.message });
        } else failure ??= { error: r.error };
      });
      // What went through is recorded even when the slice fails: a re-run counts it as done, not as new.
      await withStore('pushOrderBatch', (store) => recordOrderPushes(store, records, now()));
      if (failure) throw failure.error;
      if (signal.aborted) throw signal.reason ?? new Error('order batch cancelled');
    }
    deps.logger?.debug({ runId, cursor: cursor ?? null, next: out.next, records: out.records }, 'order batch pushed');
    return out;
  }

  return {
    async fetchAndLoad({ kind, window, runId }) {
      return withHeartbeat(async (signal) => {
        const bounds = windowBounds(window);
        // The signal reaches the download: a cancelled activity stops streaming at once.
        const client = {
          fetchReport: (args: Parameters<ServiceClients['reporting']['fetchReport']>[0]) => deps.clients.reporting.fetchReport({ ...args, signal }),
        };
        const landed = await fetchReport({ client, dataDir }, kind, { start: bounds.start, end: bounds.end, format: 'json' });
        // When the service answered, by its own clock (its Date header); without one, ours at the answer.
        const serviceTime = landed.meta.service_time ?? landed.meta.fetched_at;
        const r = await withStore('fetchAndLoad', async (store) => {
          const loaded = await loadReport(store, landed.path, { kind, format: 'json', window: { start: window.from, end: window.to } });
          // After the load's commit: the record never claims more than the store holds.
          await recordReportFetch(store, { kind, window, serviceTime, fetchedAt: landed.meta.fetched_at, records: loaded.rowsLoaded, quarantined: loaded.quarantined, runId });
          return loaded;
        });
        const complete = windowComplete(window, serviceTime);
        deps.logger?.debug(
          { kind, window: windowId(window), runId, records: r.rowsLoaded, quarantined: r.quarantined, serviceTime, complete },
          complete ? 'report window loaded' : "report window loaded; it reaches past the service's clock, so it holds the data so far",
        );
        return {
          kind,
          windowId: windowId(window),
          records: r.rowsLoaded,
          quarantined: r.quarantined,
          landingFile: path.relative(dataDir, landed.path),
          serviceTime,
        };
      });
    },

    async windowsDone(kind, windows) {
      if (windows.length === 0) return [];
      return withStore('windowsDone', (store) => doneWindowIds(store, kind, windows));
    },

    async markWindowDone(kind, window, result) {
      const at = now().toISOString();
      // A result without a service time (an older worker's) is judged by this worker's clock.
      const serviceTime = result.serviceTime ?? at;
      const done = await withStore('markWindowDone', (store) =>
        recordWindowOutcome(store, {
          kind,
          window,
          records: result.records,
          quarantined: result.quarantined,
          landingFile: result.landingFile ?? null,
          serviceTime,
          doneAt: at,
        }),
      );
      if (!done) deps.logger?.debug({ kind, window: windowId(window), serviceTime }, "report window left open: the service answered before its end");
    },

    async ingestEvents() {
      const r = await withStore('ingestEvents', (store) => ingestJournal({ store, journalDir, now }));
      return { segments: r.segments.length - r.failed, events: r.loaded, duplicates: r.duplicates, quarantined: r.quarantined, failed: r.failed };
    },

    async enrich() {
      // Lookups are service calls, but the results are written by enrichEvents itself: the whole step holds the store.
      const r = await withStore('enrich', (store) =>
        enrichEvents({ store, events: deps.clients.events, now, concurrency: deps.enrichConcurrency ?? 4 }),
      );
      const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
      return { lookups: sum(r.fetched) + sum(r.notFound) + r.failed.length, failed: r.failed.length };
    },

    async computeRatios({ asOf, notify }) {
      rules ??= loadRules(cfg.thresholdsFile as string | undefined);
      const set = rules;
      const r = await withStore('computeRatios', (store) => evaluateAfterLoad(store, { asOf, rules: set, notify, now: now() }));
      return { ratios: r.ratios, alerts: r.alerts, noticesQueued: r.noticesQueued };
    },

    async deliverNotices() {
      notifiers ??= notifiersFromConfig(cfg);
      const list = notifiers;
      const logger = deps.logger ?? log();
      if (list.length === 0) {
        // Alerts with nowhere to go: said in the result (the run summary prints it) and in the log.
        const untold = await withStore('deliverNotices', (store) => untoldNotices(store));
        if (untold === 0) return { sent: 0, failed: 0, notifiers: [], untold };
        const warning = nobodyToldWarning(untold);
        logger.warn({ untold }, warning);
        return { sent: 0, failed: 0, notifiers: [], untold, warning };
      }
      // The configuration's secrets (URL tokens, SMTP credentials) are redacted from every stored delivery error.
      const r = await withStore('deliverNotices', (store) => deliverOutbox(store, list, { now: now(), secrets: secretValues(cfg), logger }));
      return { sent: r.sent, failed: r.retrying + r.failed, notifiers: list.map((n) => n.name) };
    },

    async publishSnapshot() {
      // Only when the snapshot is behind the store: every run's publish step also repairs one a killed run left.
      const r = await withStore('publishSnapshot', (store) => publishIfBehind(store, { snapshotPath }));
      if (r.removedTemps.length) deps.logger?.info({ removed: r.removedTemps }, 'removed temp copies a killed publish left beside the snapshot');
      return { path: r.path, published: r.published, generation: r.generation };
    },

    async recordRun(run) {
      // The run log does not raise the store's generation: a run is recorded after its own publish, and a
      // snapshot one run record behind is not stale (docs/spec-decisions.md, status).
      await withStore('recordRun', (store) =>
        store.transaction((s) =>
          s.run(
            `INSERT INTO runs (run_id, workflow, status, started_at, finished_at, as_of, summary, error)
             VALUES ($1, $2, $3, $4::TIMESTAMPTZ::TIMESTAMP, $5::TIMESTAMPTZ::TIMESTAMP, $6::TIMESTAMPTZ::TIMESTAMP, $7::JSON, $8)
             ON CONFLICT (run_id) DO UPDATE SET workflow = excluded.workflow, status = excluded.status, started_at = excluded.started_at,
               finished_at = excluded.finished_at, as_of = excluded.as_of, summary = excluded.summary, error = excluded.error`,
            [run.runId, run.workflow, run.status, run.startedAt, run.finishedAt, run.asOf ?? null, JSON.stringify(run.summary ?? {}), run.error ?? null],
          ),
          { generation: false },
        ),
      );
    },

    async listSubscriptions(input): Promise<SubscriptionList> {
      const ownUrl = input?.ownUrl;
      const r = await deps.clients.events.listSubscriptionsWithDate();
      // Which listed ones are cbp's: recorded in the store, or on its receiver url (recorded now, so they stay
      // cbp's when the url changes). A failure here fails the list: without the records cbp's subscriptions for
      // an earlier url would look like another consumer's, and be duplicated.
      const records = await withStore('listSubscriptions', (store) =>
        noteListedSubscriptions(
          store,
          r.subscriptions.map((s) => ({ guid: s.guid, event_type: s.event_type, active: s.active, onOwnUrl: ownUrl !== undefined && sameUrl(s.url, ownUrl) })),
          now(),
        ),
      );
      const mine = ownUrl === undefined ? r.subscriptions : r.subscriptions.filter((s) => records.has(s.guid));
      const others = ownUrl === undefined ? [] : r.subscriptions.filter((s) => !records.has(s.guid));
      // A shown password of cbp's own that cannot be compared would be planned as "matches": refuse instead of
      // guessing. Another consumer's password is never looked at.
      const password = mine.some(showsPassword) ? webhookPassword() : configuredPassword();
      const subscriptions = mine.map((s): SubscriptionView => {
        const rec = records.get(s.guid);
        return { ...subscriptionView(s, password), ...(rec ? { cbp_own: true as const } : {}), ...(rec && (rec.seenActiveAt || s.active) ? { cbp_seen_active: true as const } : {}) };
      });
      return {
        subscriptions,
        ...(ownUrl === undefined ? {} : { others: others.map((s) => ({ guid: s.guid, event_type: s.event_type, url_host: urlHost(s.url), active: s.active })) }),
        ...(r.date ? { serviceTime: r.date } : {}),
      };
    },

    async createSubscription(request) {
      // Read before the call: a missing password must fail before anything is created.
      const password = webhookPassword();
      const sub = await deps.clients.events.createSubscription({ ...request, auth: { username: request.auth.username, password } });
      // Nothing may throw after the call (a re-run activity would create a second one): a failed record is
      // logged, and the next list records it anyway while it is on the receiver url.
      await remember('createSubscription', sub.guid, (store) =>
        recordOwnSubscriptions(store, [{ guid: sub.guid, event_type: sub.event_type, origin: 'created', active: sub.active }], now()),
      );
      return { ...subscriptionView(sub, password), cbp_own: true as const, ...(sub.active ? { cbp_seen_active: true as const } : {}) };
    },

    async updateSubscription(guid, update) {
      const { auth, ...rest } = update;
      const password = auth ? webhookPassword() : configuredPassword();
      const body = auth ? { ...rest, auth: { username: auth.username, password: password as string } } : rest;
      // Nothing may throw after the call: the service has applied the update, and a failed activity is re-run.
      const sub = await deps.clients.events.updateSubscription(guid, body);
      if (sub.active) await remember('updateSubscription', guid, (store) => markSubscriptionsSeenActive(store, [guid], now()));
      return subscriptionView(sub, password);
    },

    async deleteSubscription(guid) {
      try {
        await deps.clients.events.deleteSubscription(guid);
      } catch (e) {
        // Already gone (a retried delete whose first attempt went through): the goal is met.
        if (!(e instanceof ServiceError && e.httpStatus === 404)) throw e;
      }
      await remember('deleteSubscription', guid, (store) => markSubscriptionDeleted(store, guid, now()));
    },

    async pushOrderBatch(input) {
      return withHeartbeat(async (signal) => pushOrderBatch(input, signal));
    },
  };
}
