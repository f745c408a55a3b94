// The activities the orchestration bodies (workflows/) need: the interface only. The implementations join
// client/, store/, webhook/ and the notifiers; the Temporal worker registers them and the workflows call them
// through proxyActivities, the local runner calls them directly. Same bodies either way.
//
// Rules every implementation follows:
// - arguments and results are plain JSON (they are recorded in Temporal's history): no Dates, no class
//   instances, and never a secret in a result;
// - idempotent: re-running an activity with the same input leaves the store as one run would (Temporal
//   retries activities, and a backfill re-runs a window that was running when the previous run died);
// - errors are CbpErrors (code, retryable): a refused request (HTTP 400/401/412/422) is not retryable,
//   a 5xx, timeout or network error is. worker/activity-errors.ts maps them to Temporal failures.
import type { ReportKind } from '../contract/reporting.ts';
import type { SubscribableEventType } from '../contract/resources.ts';
import type { Window } from '../lib/utc.ts';
import type { RunRow } from '../store/runs.ts';

export type { Window };

// --- reports -------------------------------------------------------------------------------------------

export interface FetchAndLoadInput {
  kind: ReportKind;
  window: Window;
  /** The run asking; the store tags the window's fetch and done mark with it. */
  runId: string;
}

export interface FetchAndLoadResult {
  kind: ReportKind;
  /** windowId(window) */
  windowId: string;
  /** Records received and loaded (valid ones). */
  records: number;
  /** Records that failed validation and went to quarantine. */
  quarantined: number;
  /** Landing file kept as received, relative to the data directory. */
  landingFile?: string;
  /**
   * The service's clock when it answered (the report response's HTTP Date header, else the worker's clock),
   * ISO UTC. The window's data is whole only when its end is at or before it (windowComplete). Absent only
   * in results of older workers: the workflow then uses its own clock.
   */
  serviceTime?: string;
  /** The window's outcome (windows_done) was recorded in the load's commit; absent in older workers' results. */
  outcomeRecorded?: boolean;
}

export interface ReportActivities {
  /**
   * Download one report window (streaming, heartbeating) to a landing file and load it into the store,
   * replacing what an earlier load of the same kind and days put there, and record the fetch and the window's outcome
   * in the load's commit. Download and load are one activity so the landing file never travels between worker hosts.
   */
  fetchAndLoad(input: FetchAndLoadInput): Promise<FetchAndLoadResult>;
}

/** Finished windows kept in the store (fetchAndLoad records them: a backfill's and a nightly's), so a backfill skips them. */
export interface WindowStateActivities {
  /** The ids (windowId) of the given windows of `kind` already finished. */
  windowsDone(kind: ReportKind, windows: Window[]): Promise<string[]>;
  /**
   * Records a loaded window's outcome: done (skipped by later backfills) only when the service answered after
   * its end (`result.serviceTime`, else the worker's clock); otherwise it is left open and a done mark an
   * earlier run recorded for it is removed (a re-fetch found it still running). Nothing to write when the load
   * recorded it (`result.outcomeRecorded`).
   */
  markWindowDone(kind: ReportKind, window: Window, result: FetchAndLoadResult): Promise<void>;
}

// --- the rest of the pipeline ---------------------------------------------------------------------------

export interface IngestResult {
  /** Closed journal segments loaded by this call. */
  segments: number;
  /** Events inserted (duplicates by event_guid not counted). */
  events: number;
  duplicates: number;
  quarantined: number;
  /** Segments that could not be loaded; they stay in the journal for the next call. */
  failed: number;
  /** Set when the ingest workflow's last recorded run failed: this run is recorded even with nothing to load, so its
   * success sends pipeline_recovered (activities/pipeline-notices.ts). */
  afterFailure?: true;
}

export interface EnrichResult {
  /** Detail lookups made (GET /chargeback/{guid}, /prevention/{guid}, ...). */
  lookups: number;
  /** Lookups that failed and stay pending for the next run. */
  failed: number;
}

export interface ComputeRatiosInput {
  /** The UTC day the ratios are computed for (YYYY-MM-DD). */
  asOf: string;
  /** false: evaluate and store alerts, but queue no notices (a backfill of old months must not page anyone). */
  notify: boolean;
}

export interface ComputeRatiosResult {
  /** Ratio rows written. */
  ratios: number;
  /** Alerts firing as of asOf. */
  alerts: number;
  /** Notices queued by this call (alerts not noticed before). */
  noticesQueued: number;
  /** Ratio rows of asOf's month and the one before that cannot be judged (a source missing: state unknown), and what to load. Absent: none. */
  unknown?: { series: number; missing: string[] };
  /** MIDs judged under the default region (none of their own in the thresholds file), and what the run summary says. Absent: none. */
  noRegion?: { mids: number; region: string; note: string };
}

export interface DeliverResult {
  sent: number;
  /** Still pending after this call; retried by the next call. */
  failed: number;
  /** The notifiers configured (webhook, slack, email); empty: notices go nowhere. Absent in older histories. */
  notifiers?: string[];
  /** With no notifier configured: notices marked for delivery that no notifier ever sent. */
  untold?: number;
  /** Representment deadline notices raised by this call (alerts/due.ts); absent when none (and in older histories). */
  dueQueued?: number;
  /** Set when notices reach nobody (no notifier configured): what to set. The run summary prints it. */
  warning?: string;
}

export interface PublishResult {
  /** Path of the published read-only snapshot. */
  path: string;
  /** False when the snapshot already held the store's generation and was left as it was. */
  published?: boolean;
  /** The store generation the snapshot holds (null: a store without the counter). */
  generation?: number | null;
}

export type WorkflowName = 'nightly' | 'backfill' | 'ingestEvents' | 'reconcileSubscriptions' | 'pushOrders' | 'maintainStore' | 'sendDigest';

/** A row of the run log (store/runs.ts), written by the recordRun activity at a run's end. */
export interface RunRecord extends RunRow {
  workflow: WorkflowName;
}

export interface PipelineActivities {
  /** Load closed journal segments into the store (each segment once). */
  ingestEvents(): Promise<IngestResult>;
  /** Fetch details the events lack (the lookups of the events interface). */
  enrich(): Promise<EnrichResult>;
  /** Compute ratios and evaluate the alert rules; queue notices for new alerts when `notify`. */
  computeRatios(input: ComputeRatiosInput): Promise<ComputeRatiosResult>;
  /** Send queued notices (webhook, Slack, e-mail); each notice is sent once. */
  deliverNotices(): Promise<DeliverResult>;
  /**
   * Publish the read-only snapshot analysts query, when it is behind the store (its generation older, or no
   * snapshot): a run that wrote nothing still repairs a snapshot a killed run left behind.
   */
  publishSnapshot(): Promise<PublishResult>;
  recordRun(run: RunRecord): Promise<void>;
  /** The store's upkeep (store/lake-maintain.ts): a lake's files merged and old snapshots expired; a file checkpointed. */
  maintainStore(input: MaintainInput): Promise<MaintainSummary>;
  /** The digest e-mail: the rows at risk, the cases due soon, two trend charts (alerts/digest.ts). */
  sendDigest(): Promise<DigestSummary>;
}

/** What a digest sent (alerts/digest.ts DigestSent). */
export interface DigestSummary {
  to: string; day: string; months: string[]; atRisk: number; atRiskTotal: number; due: number; charts: number; behind: string | null;
}

/** What the upkeep keeps: snapshots younger than keepDays, files until graceHours old (defaults 7 and 24). */
export interface MaintainInput {
  keepDays?: number;
  graceHours?: number;
}

export interface MaintainSummary {
  lake: boolean;
  mergedFiles: number;
  expiredSnapshots: number;
  deletedFiles: number;
  dataFiles: number;
  /** CBP_RETENTION_DAYS (opt-in): raw files the store has loaded, deleted past that age (store/retention.ts). */
  retention?: { days: number; landingFiles: number; journalSegments: number; bytes: number; keptNotLoaded: number };
}

// --- subscriptions --------------------------------------------------------------------------------------

// The webhook password never crosses this boundary: the activities hold it (config.webhookPassword) and add
// it to what they send; what goes in and comes out (recorded in Temporal's history) carries the username
// and, for a listed subscription, only whether the service's password matches ours.

/** A subscription's credentials as the workflow sees them. */
export interface SubscriptionAuthView {
  username?: string;
  /** Present only when the service showed a non-empty password: whether it equals the configured one. */
  password_matches?: boolean;
}

/**
 * A subscription (subscription_confirmation) without its password. Only the spec's fields are kept: an
 * unknown field the service adds could carry credentials, and the plan needs none of them.
 */
export interface SubscriptionView {
  guid: string;
  email: string;
  url: string;
  event_type: SubscribableEventType;
  active: boolean;
  created_at: string;
  updated_at: string;
  auth?: SubscriptionAuthView;
  /** Recorded in cbp's store as its own (cbp created it, or listed it on its receiver url). Absent: not recorded. */
  cbp_own?: true;
  /** cbp has seen it active, so it passed the service's vetting: when inactive, an update re-activates it. */
  cbp_seen_active?: true;
}

/**
 * Another consumer's subscription (the service pushes each event to every active subscription of its type, so
 * a merchant's CRM may hold its own). cbp leaves it alone and keeps only this of it: never its url path or
 * query (they may hold a token), its e-mail or its credentials.
 */
export interface ForeignSubscription {
  /** '?' when the service's item has none readable. */
  guid: string;
  /** As listed, also a type cbp does not subscribe to (`order_validation.new`); '?' when not a type's name. */
  event_type: string;
  /** Host (and port) of its url, lower case; no user info. */
  url_host: string;
  active: boolean;
}

export interface ListSubscriptionsInput {
  /**
   * cbp's receiver url. Listed subscriptions on it, and those the store records as cbp's own (created by cbp,
   * possibly for an earlier url), are returned in full in `subscriptions` and recorded as cbp's; every other
   * one only as a ForeignSubscription in `others`.
   */
  ownUrl: string;
}

/** The username half of the webhook's Basic credentials; the activity adds the configured password. */
export interface WebhookUser {
  username: string;
}

/** subscribe, minus the password. */
export interface SubscribeIntent {
  email: string;
  url: string;
  event_type: SubscribableEventType;
  auth: WebhookUser;
}

/** subscription_update, minus the password: `auth` present means "send the credentials" (username + configured password). */
export interface SubscriptionUpdateIntent {
  email?: string;
  url?: string;
  active?: boolean;
  auth?: WebhookUser;
}

export interface SubscriptionList {
  /** With `ownUrl`: cbp's own subscriptions only. Without: every subscription of the account. */
  subscriptions: SubscriptionView[];
  /** With `ownUrl`: every other consumer's subscription, reduced. */
  others?: ForeignSubscription[];
  /** The service's clock when it answered (its HTTP Date header), ISO UTC; judges vetting age. */
  serviceTime?: string;
}

export interface SubscriptionActivities {
  /**
   * Throws ConfigError (CBP_WEBHOOK_PASSWORD) when a listed password of cbp's own must be compared and none is
   * configured. With `ownUrl`, records in the store which listed subscriptions are cbp's and which of them it
   * saw active.
   */
  listSubscriptions(input?: ListSubscriptionsInput): Promise<SubscriptionList>;
  /** Throws ConfigError (CBP_WEBHOOK_PASSWORD) when no password is configured. Records the new guid as cbp's own. */
  createSubscription(request: SubscribeIntent): Promise<SubscriptionView>;
  /** With `update.auth`: throws ConfigError (CBP_WEBHOOK_PASSWORD) when no password is configured. */
  updateSubscription(guid: string, update: SubscriptionUpdateIntent): Promise<SubscriptionView>;
  deleteSubscription(guid: string): Promise<void>;
}

// --- orders ---------------------------------------------------------------------------------------------

// Orders never cross this boundary: they hold names, addresses, e-mails and card digits, and Temporal records
// every input and result. One activity per batch reads the records from the file, hashes them, compares them
// with what was pushed, pushes and records; the workflow sees a cursor and counts.

export interface PushOrderBatchInput {
  /** NDJSON or CSV file (by extension or content), as the worker sees it. */
  source: string;
  /** Opaque position from the previous batch; absent for the first. */
  cursor?: string;
  /** Records read per batch. */
  batchSize: number;
  /** Pushes whose outcomes are recorded together (a crash loses at most this many records of pushes). */
  pushBatchSize: number;
  runId: string;
  /** Send orders whose unchanged content the service refused before (otherwise skipped as stillRejected). */
  retryRejected?: boolean;
}

/** What a batch did, in counts: records = new + changed + retried + unchanged + stillRejected + rejected + invalid + repeated. */
export interface OrderBatchCounts {
  /** Records read (lines or CSV records that are not blank), valid or not. */
  records: number;
  /** Pushed, first time. */
  new: number;
  /** Pushed, content changed since the last push or refusal. */
  changed: number;
  /** Pushed unchanged after an earlier refusal (retryRejected). */
  retried: number;
  /** Same content as last pushed: not sent. */
  unchanged: number;
  /** Same content as last refused: not sent (retryRejected sends them). */
  stillRejected: number;
  /** Refused by the service in this run (its own POST /order answered 400/422): recorded with the message. */
  rejected: number;
  /** Failed validation in the file: not sent, recorded with line and field. */
  invalid: number;
  /** An order_id listed again later in the file: the later state is the one that counts. */
  repeated: number;
}

export interface PushOrderBatchResult extends OrderBatchCounts {
  /** Cursor of the next batch; null at the end of the file. */
  next: string | null;
}

export interface OrderActivities {
  /**
   * One batch of the order file: read and validate, hash, compare with the last push of each order_id, POST
   * /order the new and changed ones, record every outcome and every invalid line in the store. Only the
   * order's own POST /order answering 400/422 refuses it; a key failure (DataKeyError) or any other failure
   * throws after recording what was already pushed.
   */
  pushOrderBatch(input: PushOrderBatchInput): Promise<PushOrderBatchResult>;
}

// --- all ------------------------------------------------------------------------------------------------

/** Every activity the workflows call. */
export type Activities = ReportActivities & WindowStateActivities & PipelineActivities & SubscriptionActivities & OrderActivities;

/**
 * What a body receives: the activities plus a clock. Under Temporal `now` is the workflow's deterministic
 * clock (not an activity); in the local runner it is the wall clock or a test's fake clock.
 */
export interface Clock {
  /** The current time, ISO 8601 UTC. */
  now(): string;
}

export type WorkflowActs = Activities & Clock;

/** Names of the activities, e.g. to check a registered implementation is complete. */
export const ACTIVITY_NAMES = [
  'fetchAndLoad',
  'windowsDone',
  'markWindowDone',
  'ingestEvents',
  'enrich',
  'computeRatios',
  'deliverNotices',
  'publishSnapshot',
  'recordRun',
  'maintainStore',
  'sendDigest',
  'listSubscriptions',
  'createSubscription',
  'updateSubscription',
  'deleteSubscription',
  'pushOrderBatch',
] as const satisfies ReadonlyArray<keyof Activities>;
