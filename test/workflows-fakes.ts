// In-memory fake activities for the orchestration bodies: every call is recorded, state lives in maps, and
// faults are scripted (fail after N report windows, refuse an order, ...).
import type {
  FetchAndLoadInput,
  FetchAndLoadResult,
  PushOrderBatchInput,
  PushOrderBatchResult,
  RunRecord,
  ForeignSubscription,
  ListSubscriptionsInput,
  SubscribeIntent,
  SubscriptionList,
  SubscriptionUpdateIntent,
  SubscriptionView,
  WorkflowActs,
} from '../activities/types.ts';
import type { MerchantOrder, ReportKind } from '../contract/index.ts';
import { windowComplete, windowId, type Window } from '../lib/utc.ts';
import { planOrderPushes, resultBeforePushes, type KnownPush } from '../activities/orders-plan.ts';

export interface FakeOptions {
  /** Start time of the fake clock (ISO); each now() call advances it by one second. */
  now?: string;
  /** fetchAndLoad throws after this many successful calls. */
  failAfterLoads?: number;
  /** Milliseconds a fetchAndLoad takes, by call number (so lanes interleave). */
  loadDelay?: (call: number) => number;
  /**
   * The service's clock in report answers (fetchAndLoad's serviceTime). Default: the fake clock's time at the
   * call (the service is as far as we are). `null`: left out, as an older worker's result.
   */
  reportServiceTime?: string | null;
  /**
   * The account's subscriptions as the list activity shows them (no password, at most password_matches). Given
   * `ownUrl`, the fake list answers as the real one does: those on the url or marked `cbp_own` in full (and
   * marked cbp_own from then on, with cbp_seen_active once seen active), the rest reduced in `others`.
   */
  subscriptions?: SubscriptionView[];
  /** Guids whose update with `active: true` the service refuses (400), as it does after failed vetting. */
  refuseActivation?: string[];
  /** Throw the refusal as Temporal delivers an activity's failure (ActivityFailure → ApplicationFailure type). */
  refusalAsTemporalFailure?: boolean;
  serviceTime?: string;
  /** Orders by source name (record i is on line i + 1); pushOrderBatch reads, plans and pushes them as the real one does. */
  sources?: Record<string, MerchantOrder[]>;
  /** order_id → the service's refusal. */
  refuse?: Record<string, { status: number; message: string }>;
}

export interface FakeState {
  calls: Array<{ name: string; args: unknown[] }>;
  loads: Map<string, number>;
  done: Map<ReportKind, Set<string>>;
  runs: RunRecord[];
  active: number;
  maxActive: number;
  loadCount: number;
  subscriptions: SubscriptionView[];
  /** What the fake store knows per order_id (the real one: order_pushes). */
  pushes: Map<string, KnownPush>;
  pushRecords: Array<KnownPush & { order_id: string; httpStatus?: number; message?: string }>;
  pushedOrders: MerchantOrder[];
}

export function createFakes(opts: FakeOptions = {}): { acts: WorkflowActs; state: FakeState; options: FakeOptions } {
  let clock = Date.parse(opts.now ?? '2026-03-15T02:30:00Z');
  let guidSeq = 0;
  const state: FakeState = {
    calls: [],
    loads: new Map(),
    done: new Map(),
    runs: [],
    active: 0,
    maxActive: 0,
    loadCount: 0,
    subscriptions: structuredClone(opts.subscriptions ?? []),
    pushes: new Map(),
    pushRecords: [],
    pushedOrders: [],
  };
  const log = (name: string, ...args: unknown[]) => state.calls.push({ name, args: structuredClone(args) });
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

  const acts: WorkflowActs = {
    now: () => {
      const t = new Date(clock).toISOString();
      clock += 1000;
      return t;
    },
    async fetchAndLoad(input: FetchAndLoadInput): Promise<FetchAndLoadResult> {
      log('fetchAndLoad', input);
      const call = state.loadCount + 1;
      if (opts.failAfterLoads !== undefined && state.loadCount >= opts.failAfterLoads) {
        throw Object.assign(new Error(`report download failed (scripted after ${opts.failAfterLoads})`), { code: 'CBP_ERR_SERVICE_UNAVAILABLE', retryable: true });
      }
      state.loadCount += 1;
      state.active += 1;
      state.maxActive = Math.max(state.maxActive, state.active);
      try {
        await sleep(opts.loadDelay?.(call) ?? 1);
      } finally {
        state.active -= 1;
      }
      const key = `${input.kind}:${windowId(input.window)}`;
      // Idempotent like the real load: a window loaded twice holds what one load holds.
      state.loads.set(key, 10);
      const serviceTime = opts.reportServiceTime === null ? undefined : (opts.reportServiceTime ?? new Date(clock).toISOString());
      return { kind: input.kind, windowId: windowId(input.window), records: 10, quarantined: 1, ...(serviceTime ? { serviceTime } : {}) };
    },
    async windowsDone(kind: ReportKind, windows: Window[]) {
      log('windowsDone', kind, windows);
      const set = state.done.get(kind) ?? new Set();
      return windows.map(windowId).filter((id) => set.has(id));
    },
    async markWindowDone(kind: ReportKind, window: Window, result: FetchAndLoadResult) {
      log('markWindowDone', kind, window, result);
      const set = state.done.get(kind) ?? new Set();
      // As the real one: done only when the service answered after the window's end, else any mark removed.
      if (windowComplete(window, result.serviceTime ?? new Date(clock).toISOString())) set.add(windowId(window));
      else set.delete(windowId(window));
      state.done.set(kind, set);
    },
    async ingestEvents() {
      log('ingestEvents');
      return { segments: 2, events: 40, duplicates: 1, quarantined: 0, failed: 0 };
    },
    async enrich() {
      log('enrich');
      return { lookups: 5, failed: 0 };
    },
    async computeRatios(input) {
      log('computeRatios', input);
      return { ratios: 12, alerts: 1, noticesQueued: input.notify ? 1 : 0 };
    },
    async deliverNotices() {
      log('deliverNotices');
      return { sent: 1, failed: 0 };
    },
    async publishSnapshot() {
      log('publishSnapshot');
      return { path: 'data/published/cbp.duckdb' };
    },
    async maintainStore(input) {
      log('maintainStore', input);
      return { lake: false, mergedFiles: 0, expiredSnapshots: 0, deletedFiles: 0, dataFiles: 0 };
    },
    async sendDigest() {
      log('sendDigest');
      return { to: 'ops@example.com', day: '2026-01-05', months: ['2025-12'], atRisk: 0, atRiskTotal: 0, due: 0, charts: 0, behind: null };
    },
    async recordRun(run: RunRecord) {
      log('recordRun', run);
      state.runs.push(structuredClone(run));
    },
    async listSubscriptions(input?: ListSubscriptionsInput): Promise<SubscriptionList> {
      log('listSubscriptions', ...(input ? [input] : []));
      const time = opts.serviceTime ? { serviceTime: opts.serviceTime } : {};
      if (!input) return { subscriptions: structuredClone(state.subscriptions), ...time };
      const mine: SubscriptionView[] = [];
      const others: ForeignSubscription[] = [];
      for (const s of state.subscriptions) {
        if (s.cbp_own || s.url.trim() === input.ownUrl.trim()) {
          s.cbp_own = true;
          if (s.active) s.cbp_seen_active = true;
          mine.push(structuredClone(s));
        } else {
          others.push({ guid: s.guid, event_type: s.event_type, url_host: new URL(s.url).host, active: s.active });
        }
      }
      return { subscriptions: mine, others, ...time };
    },
    async createSubscription(req: SubscribeIntent) {
      log('createSubscription', req);
      guidSeq += 1;
      const t = opts.serviceTime ?? '2026-03-15T02:30:00Z';
      const sub: SubscriptionView = {
        guid: `sub_new${String(guidSeq).padStart(29, '0')}`,
        email: req.email,
        url: req.url,
        event_type: req.event_type,
        active: false,
        created_at: t,
        updated_at: t,
        auth: { ...req.auth },
        cbp_own: true,
      };
      state.subscriptions.push(sub);
      return structuredClone(sub);
    },
    async updateSubscription(guid: string, update: SubscriptionUpdateIntent) {
      log('updateSubscription', guid, update);
      const sub = state.subscriptions.find((s) => s.guid === guid);
      if (!sub) throw Object.assign(new Error(`no subscription ${guid}`), { code: 'CBP_ERR_SERVICE_NOT_FOUND', retryable: false });
      if (update.active === true && opts.refuseActivation?.includes(guid)) {
        const message = 'events update subscription: 400 vetting failed; delete the subscription and create a new one';
        const refused = Object.assign(new Error(message), { code: 'CBP_ERR_SERVICE_BAD_REQUEST', retryable: false });
        throw opts.refusalAsTemporalFailure
          ? Object.assign(new Error('Activity task failed'), { cause: Object.assign(new Error(message), { type: 'CBP_ERR_SERVICE_BAD_REQUEST', nonRetryable: true }) })
          : refused;
      }
      if (update.active === true) sub.cbp_seen_active = true;
      // The real activity sends the configured password with the username: it matches afterwards.
      Object.assign(sub, update, update.auth ? { auth: { username: update.auth.username, password_matches: true } } : {});
      return structuredClone(sub);
    },
    async deleteSubscription(guid: string) {
      log('deleteSubscription', guid);
      state.subscriptions = state.subscriptions.filter((s) => s.guid !== guid);
    },
    async pushOrderBatch(input: PushOrderBatchInput): Promise<PushOrderBatchResult> {
      log('pushOrderBatch', input);
      const all = opts.sources?.[input.source] ?? [];
      const start = input.cursor ? Number(input.cursor) : 0;
      const records = all.slice(start, start + input.batchSize).map((order, i) => ({ line: start + i + 1, order: structuredClone(order) }));
      const end = start + records.length;
      const plan = planOrderPushes(records, state.pushes, { runId: input.runId, retryRejected: input.retryRejected === true });
      const out = resultBeforePushes(plan, { records: records.length, invalid: 0, next: end < all.length ? String(end) : null });
      for (const p of plan.push) {
        const refusal = opts.refuse?.[p.order.order_id];
        const known: KnownPush = { hash: p.hash, status: refusal ? 'rejected' : 'pushed', runId: input.runId, line: p.line, change: p.change };
        if (refusal) out.rejected++;
        else {
          out[p.change]++;
          state.pushedOrders.push(structuredClone(p.order));
        }
        state.pushes.set(p.order.order_id, known);
        state.pushRecords.push({ order_id: p.order.order_id, ...known, ...(refusal ? { httpStatus: refusal.status, message: refusal.message } : {}) });
      }
      return out;
    },
  };
  return { acts, state, options: opts };
}

export function callsOf(state: FakeState, name: string): unknown[][] {
  return state.calls.filter((c) => c.name === name).map((c) => c.args);
}
