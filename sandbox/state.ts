// Everything the sandbox holds beyond the generated world: subscriptions, pushed orders, data keys,
// matches, the e-mail outbox, the events emitted and every delivery attempt. One object, built per
// sandbox instance and handed to the modules that act on it (routes, delivery, vetting, matching).
import { createHash, randomBytes } from 'node:crypto';
import type { SubscribableEventType, WebhookAuth } from '../contract/index.ts';
import type { SandboxClock } from './clock.ts';
import type { Faults } from './faults.ts';
import type { JwtSigner } from './jwt.ts';
import type {
  MatchInfo,
  World,
  WorldChargeback,
  WorldOrderValidation,
  WorldPreventionAlert,
  WorldRdrAlert,
} from './world.ts';

export interface SandboxCredentials {
  apiSecret: string;
  dataUsername: string;
  dataPassword: string;
  reportingKey: string;
  companyToken: string;
}

/** Fixed, documented test values (docs/sandbox.md); flags and CBP_SANDBOX_* variables override them. */
export const DEFAULT_CREDENTIALS: SandboxCredentials = {
  apiSecret: 'sandbox-api-secret',
  dataUsername: 'sandbox-user',
  dataPassword: 'sandbox-password',
  reportingKey: 'sandbox-reporting-key',
  companyToken: 'sandbox-company-token',
};

export interface StoredSubscription {
  guid: string;
  email: string;
  url: string;
  event_type: SubscribableEventType;
  active: boolean;
  created_at: string;
  updated_at: string;
  auth: WebhookAuth;
  /** Vetting: 'pending' until a check succeeds, then 'passed'; 'failed' after the 9th failed check. */
  vetting: 'pending' | 'passed' | 'failed';
  vettingAttempts: number;
}

export interface StoredOrder {
  /** The service's internal id, answered as {id}; the order_guid of lookups and .match events. */
  id: string;
  order_id: string;
  /** Every field pushed so far, later pushes merged over earlier ones (validated, normalised). */
  fields: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface EmittedEvent {
  event_guid: string;
  event_type: string;
  event_timestamp: string;
  payload: Record<string, unknown>;
}

export interface DeliveryAttempt {
  event_guid: string;
  event_type: string;
  subscription_guid: string;
  url: string;
  method: 'POST' | 'OPTIONS';
  attempt: number;
  /** sandbox time of the attempt */
  time: string;
  status?: number;
  error?: string;
  /** what happens next: 'delivered', 'retry at <time>', 'gave up: too old', 'vetting', ... */
  outcome: string;
  duplicate?: boolean;
}

export interface OutboxMail {
  to: string;
  subject: string;
  body: string;
  at: string;
}

export type EntityKind = 'chargeback' | 'prevention' | 'rdr' | 'order_validation';

export interface SandboxState {
  world: World;
  clock: SandboxClock;
  faults: Faults;
  jwt: JwtSigner;
  credentials: SandboxCredentials;
  /** identifier of the sandbox's one order management system, carried as crm_account_guid */
  crmAccountGuid: string;
  deliveryTimeoutMs: number;
  subscriptions: Map<string, StoredSubscription>;
  /**
   * Other consumers' subscriptions as a real service might list them, planted through the admin API: any JSON
   * object, appended to `GET /subscribe` as given (an event type the spec's subscribe refuses, auth as a string).
   * Never vetted, delivered to, updated or deleted.
   */
  plantedSubscriptions: unknown[];
  /** pushed orders by the merchant order_id */
  orders: Map<string, StoredOrder>;
  /** pushed orders by the service id ({id}, the order_guid) */
  ordersByGuid: Map<string, StoredOrder>;
  /** pushed orders by card ("first6|last4"), for matching arriving entities without a scan */
  ordersByCard: Map<string, Set<StoredOrder>>;
  dataKeys: Set<string>;
  matches: Map<string, MatchInfo>;
  outbox: OutboxMail[];
  events: EmittedEvent[];
  deliveries: DeliveryAttempt[];
  chargebacks: Map<string, WorldChargeback>;
  alerts: Map<string, WorldPreventionAlert>;
  rdrs: Map<string, WorldRdrAlert>;
  orderValidations: Map<string, WorldOrderValidation>;
  /** gateway identifier or mid -> mid, to read an order's transaction_merchant_id */
  midOf: Map<string, string>;
}

/** The identifier format of the service: a short type prefix, an underscore, 32 lowercase hex digits. */
export function newGuid(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`;
}

const issued = new WeakMap<object, Map<string, number>>();

/**
 * The identifier of the n-th thing of `key` a sandbox makes (an order pushed, a subscription created): repeatable for
 * a world's seed, so two runs of the same story hold the same guids (a store compared with another, as in the lake
 * suite), yet never the same twice in one sandbox.
 */
export function issueGuid(state: object, seed: number, prefix: string, key: string): string {
  let counts = issued.get(state);
  if (!counts) issued.set(state, (counts = new Map()));
  const n = (counts.get(`${prefix}\u0000${key}`) ?? 0) + 1;
  counts.set(`${prefix}\u0000${key}`, n);
  return stableGuid(prefix, 'sandbox', String(seed), key, String(n));
}

/** A repeatable identifier from its parts, so the same world emits the same event guids on every run. */
export function stableGuid(prefix: string, ...parts: string[]): string {
  return `${prefix}_${createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32)}`;
}

export function createState(deps: {
  world: World;
  clock: SandboxClock;
  faults: Faults;
  jwt: JwtSigner;
  credentials: SandboxCredentials;
  deliveryTimeoutMs: number;
}): SandboxState {
  const { world } = deps;
  const midOf = new Map<string, string>();
  for (const m of world.mids) {
    midOf.set(m.mid, m.mid);
    for (const g of m.gateways) if (!midOf.has(g)) midOf.set(g, m.mid);
  }
  return {
    ...deps,
    crmAccountGuid: stableGuid('crm', 'sandbox', String(world.seed)),
    subscriptions: new Map(),
    plantedSubscriptions: [],
    orders: new Map(),
    ordersByGuid: new Map(),
    ordersByCard: new Map(),
    dataKeys: new Set(),
    matches: new Map(),
    outbox: [],
    events: [],
    deliveries: [],
    chargebacks: new Map(world.chargebacks.map((c) => [c.chargeback_guid, c])),
    alerts: new Map(world.alerts.map((a) => [a.prevention_guid, a])),
    rdrs: new Map(world.rdrs.map((r) => [r.rdr_guid, r])),
    orderValidations: new Map(world.orderValidations.map((o) => [o.order_validation_guid, o])),
    midOf,
  };
}

/** Forgets everything the sandbox learnt or did since it started (the clock is reset by its owner). */
export function resetState(state: SandboxState): void {
  state.subscriptions.clear();
  state.plantedSubscriptions.length = 0;
  state.orders.clear();
  state.ordersByGuid.clear();
  state.ordersByCard.clear();
  state.dataKeys.clear();
  state.matches.clear();
  state.outbox.length = 0;
  state.events.length = 0;
  state.deliveries.length = 0;
  state.faults.clear();
}

/** The time an entity becomes known to the service. */
export function arrivalOf(kind: EntityKind, e: WorldChargeback | WorldPreventionAlert | WorldRdrAlert | WorldOrderValidation): string {
  switch (kind) {
    case 'chargeback':
      return (e as WorldChargeback).received_at;
    case 'prevention':
      return (e as WorldPreventionAlert).prevention_at;
    case 'rdr':
      return (e as WorldRdrAlert).rdr_at;
    case 'order_validation':
      return (e as WorldOrderValidation).received_at;
  }
}

/** True when the entity exists at the sandbox clock's now. */
export function isKnown(state: SandboxState, iso: string): boolean {
  return Date.parse(iso) <= state.clock.now();
}

export function sendMail(state: SandboxState, to: string, subject: string, body: string): void {
  state.outbox.push({ to, subject, body, at: state.clock.nowIso() });
}

/** The subscription as the events interface shows it (subscription_confirmation). */
export function confirmation(s: StoredSubscription): Record<string, unknown> {
  return {
    guid: s.guid,
    email: s.email,
    url: s.url,
    event_type: s.event_type,
    active: s.active,
    created_at: s.created_at,
    updated_at: s.updated_at,
    auth: { username: s.auth.username, password: s.auth.password },
  };
}
