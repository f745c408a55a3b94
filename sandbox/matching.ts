// Matching of world entities (chargebacks, prevention alerts, RDR alerts, order validation requests) to
// orders pushed through the order data interface: same card (first 6 and last 4), same amount (to the
// cent), and, when the order names a transaction_merchant_id, the same merchant account. An entity matches
// at most one order (the first pushed that fits) and stays matched. A match emits the .match event.
import { normaliseBrand } from '../contract/index.ts';
import { emit } from './delivery.ts';
import {
  chargebackMatchFields,
  orderValidationMatchFields,
  preventionMatchFields,
  rdrMatchFields,
} from './payloads.ts';
import { arrivalOf, isKnown, type EntityKind, type SandboxState, type StoredOrder } from './state.ts';
import type { MatchInfo, WorldChargeback, WorldOrderValidation, WorldPreventionAlert, WorldRdrAlert } from './world.ts';

type Entity = WorldChargeback | WorldPreventionAlert | WorldRdrAlert | WorldOrderValidation;
interface Indexed {
  kind: EntityKind;
  guid: string;
  entity: Entity;
}

const guidOf = (kind: EntityKind, e: Entity): string =>
  kind === 'chargeback'
    ? (e as WorldChargeback).chargeback_guid
    : kind === 'prevention'
      ? (e as WorldPreventionAlert).prevention_guid
      : kind === 'rdr'
        ? (e as WorldRdrAlert).rdr_guid
        : (e as WorldOrderValidation).order_validation_guid;

const cardKey = (first6: unknown, last4: unknown) => `${String(first6 ?? '')}|${String(last4 ?? '')}`;

const byCard = new WeakMap<SandboxState, Map<string, Indexed[]>>();

function entityIndex(state: SandboxState): Map<string, Indexed[]> {
  let idx = byCard.get(state);
  if (idx) return idx;
  idx = new Map();
  const add = (kind: EntityKind, list: Entity[]) => {
    for (const e of list) {
      const k = cardKey(e.card_first_6, e.card_last_4);
      let arr = idx!.get(k);
      if (!arr) idx!.set(k, (arr = []));
      arr.push({ kind, guid: guidOf(kind, e), entity: e });
    }
  };
  add('chargeback', state.world.chargebacks);
  add('prevention', state.world.alerts);
  add('rdr', state.world.rdrs);
  add('order_validation', state.world.orderValidations);
  byCard.set(state, idx);
  return idx;
}

/** The merchant account an order's transaction_merchant_id maps to (a mid or one of its gateways). */
export function orderMid(state: SandboxState, order: StoredOrder): string | undefined {
  const t = order.fields.transaction_merchant_id;
  return typeof t === 'string' ? state.midOf.get(t) : undefined;
}

export function orderBrand(order: StoredOrder): string | undefined {
  return normaliseBrand(order.fields.cc_type);
}

export function orderFits(state: SandboxState, order: StoredOrder, e: Entity): boolean {
  const f = order.fields;
  if (f.cc_first_6 !== e.card_first_6 || f.cc_last_4 !== e.card_last_4) return false;
  if (f.order_total === undefined || Math.abs(Number(f.order_total) - e.amount) >= 0.005) return false;
  if (f.transaction_merchant_id !== undefined && f.transaction_merchant_id !== e.mid && orderMid(state, order) !== e.mid) return false;
  return true;
}

function infoFor(state: SandboxState, order: StoredOrder): MatchInfo {
  const f = order.fields;
  const name = [f.billing_first_name, f.billing_last_name].filter((x) => typeof x === 'string' && x !== '').join(' ');
  const shipments = (f.fulfillment as { shipments?: Array<{ tracking_number?: string }> } | undefined)?.shipments;
  const tracking = shipments?.find((s) => s.tracking_number)?.tracking_number;
  return {
    order_id: order.order_id,
    order_guid: order.id,
    crm_account_guid: state.crmAccountGuid,
    ...(name ? { name } : {}),
    ...(tracking ? { tracking_number: tracking } : {}),
    matched_at: state.clock.nowIso(),
  };
}

function emitMatch(state: SandboxState, it: Indexed, m: MatchInfo): void {
  switch (it.kind) {
    case 'chargeback':
      emit(state, 'chargeback.match', it.guid, chargebackMatchFields(it.entity as WorldChargeback, m));
      break;
    case 'prevention':
      emit(state, 'prevention.match', it.guid, preventionMatchFields(it.entity as WorldPreventionAlert, m));
      break;
    case 'rdr':
      emit(state, 'rdr.match', it.guid, rdrMatchFields(it.entity as WorldRdrAlert, m));
      break;
    case 'order_validation':
      emit(state, 'order_validation.match', it.guid, orderValidationMatchFields(it.entity as WorldOrderValidation, m));
      break;
  }
}

const indexedUnder = new WeakMap<StoredOrder, string>();

/** Files the order under its current card in state.ordersByCard (moving it if an update changed the card). */
function indexOrder(state: SandboxState, order: StoredOrder): void {
  const key = cardKey(order.fields.cc_first_6, order.fields.cc_last_4);
  const was = indexedUnder.get(order);
  if (was === key && state.ordersByCard.get(key)?.has(order)) return;
  if (was !== undefined) state.ordersByCard.get(was)?.delete(order);
  let set = state.ordersByCard.get(key);
  if (!set) state.ordersByCard.set(key, (set = new Set()));
  set.add(order);
  indexedUnder.set(order, key);
}

/** After a push: matches every known, unmatched entity the order fits. Returns how many matched. */
export function matchPushedOrder(state: SandboxState, order: StoredOrder): number {
  indexOrder(state, order);
  const list = entityIndex(state).get(cardKey(order.fields.cc_first_6, order.fields.cc_last_4)) ?? [];
  let n = 0;
  for (const it of list) {
    if (state.matches.has(it.guid) || !isKnown(state, arrivalOf(it.kind, it.entity))) continue;
    if (!orderFits(state, order, it.entity)) continue;
    const m = infoFor(state, order);
    state.matches.set(it.guid, m);
    emitMatch(state, it, m);
    n++;
  }
  return n;
}

/** When an entity arrives: matches it to the first pushed order it fits, if any. */
export function matchArrivedEntity(state: SandboxState, kind: EntityKind, entity: Entity): MatchInfo | undefined {
  const guid = guidOf(kind, entity);
  if (state.matches.has(guid)) return state.matches.get(guid);
  for (const order of state.ordersByCard.get(cardKey(entity.card_first_6, entity.card_last_4)) ?? []) {
    if (!orderFits(state, order, entity)) continue;
    const m = infoFor(state, order);
    state.matches.set(guid, m);
    emitMatch(state, { kind, guid, entity }, m);
    return m;
  }
  return undefined;
}

/** The matchOf callback for reports: the match of an entity as known at `now` (ISO). */
export function matchOfAt(state: SandboxState, now: string): (guid: string) => MatchInfo | undefined {
  const t = Date.parse(now);
  return (guid) => {
    const m = state.matches.get(guid);
    return m && Date.parse(m.matched_at) <= t ? m : undefined;
  };
}
