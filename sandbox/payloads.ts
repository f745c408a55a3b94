// The shapes the service shows of world entities: event payload fields (the spec's events table) and
// lookup resources (GET /chargeback, /prevention, /order_validation, /order). Plain functions of an
// entity and, once matched, its MatchInfo.
import { isoSeconds } from './clock.ts';
import type { StoredOrder } from './state.ts';
import type { MatchInfo, WorldChargeback, WorldOrderValidation, WorldPreventionAlert, WorldRdrAlert } from './world.ts';

const iso = (t: string) => isoSeconds(Date.parse(t));
const day = (t: string) => iso(t).slice(0, 10);

/**
 * Every field the spec lists is present in a payload or resource, whether or not the sandbox has a value
 * for it: an unavailable string field (an "if available" arn, the order_guid and order_id of a case not yet
 * matched) is the empty string, the reporting interface's "empty until matched" convention. A field that
 * comes and goes with the data would make a payload's shape depend on luck.
 */
function compact(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = v === undefined || v === null ? '' : v;
  return out;
}

/** The card network of a BIN, for an order pushed without cc_type (the Order resource lists card_brand). */
export function brandOfBin(first6: unknown): string | undefined {
  const b = typeof first6 === 'string' ? first6 : '';
  if (!/^\d{6}$/.test(b)) return undefined;
  const n2 = Number(b.slice(0, 2));
  const n4 = Number(b.slice(0, 4));
  if (b.startsWith('4')) return 'visa';
  if ((n2 >= 51 && n2 <= 55) || (n4 >= 2221 && n4 <= 2720)) return 'mastercard';
  if (n2 === 34 || n2 === 37) return 'american_express';
  if (b.startsWith('6011') || b.startsWith('65') || (n4 >= 6440 && n4 <= 6499)) return 'discover';
  return undefined;
}

const matchFields = (m: MatchInfo) => ({ crm_account_guid: m.crm_account_guid, order_guid: m.order_guid, order_id: m.order_id });

export function chargebackNewFields(c: WorldChargeback): Record<string, unknown> {
  return compact({
    alternate_transaction_id: c.alternate_transaction_id,
    amount: c.amount,
    arn: c.arn,
    auth_code: c.auth_code,
    card_brand: c.card_brand,
    card_first_6: c.card_first_6,
    card_last_4: c.card_last_4,
    case_number: c.case_number,
    chargeback_date: c.chargeback_date,
    chargeback_guid: c.chargeback_guid,
    currency: c.currency,
    date_received: day(c.received_at),
    due_date: c.due_date,
    mid: c.mid,
    processor_transaction_date: iso(c.transaction_at),
    processor_transaction_id: c.processor_transaction_id,
    reason_code: c.reason_code,
    reason_description: c.reason_description,
  });
}

export const chargebackMatchFields = (c: WorldChargeback, m: MatchInfo) => ({ ...chargebackNewFields(c), ...matchFields(m) });

export function chargebackResultFields(c: WorldChargeback, result: 'won' | 'lost' | 'pre-arbitration'): Record<string, unknown> {
  return compact({ arn: c.arn, case_number: c.case_number, chargeback_guid: c.chargeback_guid, mid: c.mid, result });
}

export function chargebackDnfFields(c: WorldChargeback, at: string): Record<string, unknown> {
  return compact({
    arn: c.arn,
    case_number: c.case_number,
    chargeback_guid: c.chargeback_guid,
    mid: c.mid,
    dnf_reason: c.dnf_reason ?? 'Merchant chose not to fight',
    dnf_timestamp: iso(at),
  });
}

export function preventionNewFields(a: WorldPreventionAlert): Record<string, unknown> {
  return compact({
    amount: a.amount,
    arn: a.arn,
    card_first_6: a.card_first_6,
    card_last_4: a.card_last_4,
    currency: a.currency,
    merchant_descriptor: a.merchant_descriptor,
    mid: a.mid,
    prevention_case_number: a.prevention_case_number,
    prevention_guid: a.prevention_guid,
    prevention_timestamp: iso(a.prevention_at),
    prevention_type: a.prevention_type,
    transaction_timestamp: iso(a.transaction_at),
  });
}

export const preventionMatchFields = (a: WorldPreventionAlert, m: MatchInfo) => ({ ...preventionNewFields(a), ...matchFields(m) });

export function rdrNewFields(r: WorldRdrAlert): Record<string, unknown> {
  return compact({
    amount: r.amount,
    arn: r.arn,
    auth_code: r.auth_code,
    card_first_6: r.card_first_6,
    card_last_4: r.card_last_4,
    currency: r.currency,
    merchant_descriptor: r.merchant_descriptor,
    rdr_case_number: r.rdr_case_number,
    rdr_guid: r.rdr_guid,
    rdr_date: day(r.rdr_at),
    rdr_resolution: r.rdr_resolution,
    prevention_type: 'rdr',
    transaction_date: day(r.transaction_at),
  });
}

export const rdrMatchFields = (r: WorldRdrAlert, m: MatchInfo) => ({ ...rdrNewFields(r), ...matchFields(m) });

export function orderValidationNewFields(o: WorldOrderValidation): Record<string, unknown> {
  return compact({
    order_validation_type: o.order_validation_type,
    order_validation_timestamp: iso(o.received_at),
    order_validation_guid: o.order_validation_guid,
    transaction_timestamp: iso(o.transaction_at),
    amount: o.amount,
    currency: o.currency,
    card_first_6: o.card_first_6,
    card_last_4: o.card_last_4,
    arn: o.arn,
    auth_code: o.auth_code,
    card_brand: o.card_brand,
  });
}

export const orderValidationMatchFields = (o: WorldOrderValidation, m: MatchInfo) => ({
  ...orderValidationNewFields(o),
  ...matchFields(m),
  mid: o.mid,
});

// --- lookup resources ---

export function chargebackResource(c: WorldChargeback, m: MatchInfo | undefined): Record<string, unknown> {
  return compact({
    amount: c.amount,
    arn: c.arn,
    card_brand: c.card_brand,
    card_first_6: c.card_first_6,
    card_last_4: c.card_last_4,
    case_number: c.case_number,
    chargeback_date: c.chargeback_date,
    chargeback_guid: c.chargeback_guid,
    currency: c.currency,
    date_received: day(c.received_at),
    mid: c.mid,
    order_guid: m?.order_guid,
    order_id: m?.order_id,
    reason_code: c.reason_code,
  });
}

export function preventionResource(a: WorldPreventionAlert, m: MatchInfo | undefined): Record<string, unknown> {
  return compact({
    amount: a.amount,
    arn: a.arn,
    card_brand: a.card_brand,
    card_first_6: a.card_first_6,
    card_last_4: a.card_last_4,
    currency: a.currency,
    merchant_descriptor: a.merchant_descriptor,
    mid: a.mid,
    order_guid: m?.order_guid,
    order_id: m?.order_id,
    prevention_case_number: a.prevention_case_number,
    prevention_guid: a.prevention_guid,
    prevention_timestamp: iso(a.prevention_at),
    prevention_type: a.prevention_type,
    transaction_timestamp: iso(a.transaction_at),
  });
}

export function orderValidationResource(o: WorldOrderValidation, m: MatchInfo | undefined): Record<string, unknown> {
  return compact({
    ...orderValidationNewFields(o),
    // The resource types card_first_6 as a number (payload examples render it as a string, as the
    // order_validation events here do): the lookup follows the type, so clients meet both readings.
    card_first_6: /^\d{6}$/.test(o.card_first_6) ? Number(o.card_first_6) : o.card_first_6,
    order_guid: m?.order_guid,
    order_id: m?.order_id,
    crm_account_guid: m?.crm_account_guid,
    mid: o.mid,
  });
}

export function orderResource(o: StoredOrder, mid: string | undefined, brand: string | undefined): Record<string, unknown> {
  const f = o.fields;
  return compact({
    order_guid: o.id,
    crm_order_id: o.order_id,
    mid,
    card_first_6: f.cc_first_6,
    card_last_4: f.cc_last_4,
    card_brand: brand ?? brandOfBin(f.cc_first_6),
    amount: f.order_total === undefined ? undefined : Number(f.order_total),
    currency: f.currency ?? 'USD',
    billing_first_name: f.billing_first_name,
    billing_last_name: f.billing_last_name,
    order_date: f.order_date,
  });
}
