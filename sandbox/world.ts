// The sandbox's generated world: everything the emulated service "knows", as plain data with timestamps.
// The generator (generate.ts) builds it from (seed, start, scenario); the server (server.ts) reveals it as
// its simulated clock passes each timestamp: reports and lookups show what is known at `now`, and events
// are emitted when the clock crosses their time. Same seed + start + scenario => the same world, byte for byte.
import type { CardBrand, Network } from '../contract/common.ts';
import type { ChargebackStatus } from '../contract/reporting.ts';

export interface WorldMid {
  mid: string;
  alias: string;
  gateways: string[];
  merchant_descriptor: string;
  /** Visa region of the merchant (for VAMP), e.g. 'US', 'CEMEA'. */
  region: string;
  /** Currency of the MID's transactions and cases (ISO 4217); USD when the scenario gives none. */
  currency?: string;
}

/** Settled transactions of one MID, network and UTC day. */
export interface DailyStat {
  mid: string;
  network: Network;
  /** YYYY-MM-DD */
  day: string;
  transaction_count: number;
  transaction_amount: number;
}

export interface StatusChange {
  /** ISO 8601 UTC time the status became current */
  at: string;
  status: ChargebackStatus;
}

export interface WorldChargeback {
  chargeback_guid: string;
  case_number: string;
  arn?: string;
  mid: string;
  card_brand: Network;
  card_first_6: string;
  card_last_4: string;
  amount: number;
  currency: string;
  reason_code: string;
  reason_description: string;
  /** YYYY-MM-DD the issuing bank filed it */
  chargeback_date: string;
  /** ISO time the service received it: the case exists from then on (chargeback.new is emitted at it). */
  received_at: string;
  /** YYYY-MM-DD representment due date */
  due_date: string;
  /** ISO time of the original transaction */
  transaction_at: string;
  auth_code: string;
  processor_transaction_id: string;
  alternate_transaction_id: string;
  /** The status history, first entry at received_at with status 'New'; sorted by time. */
  statuses: StatusChange[];
  /** Reason given when a status change is to 'Did Not Fight'. */
  dnf_reason?: string;
  /** True when the case is a fraud dispute (Mastercard 4837/4863, Visa 10.x ...). */
  fraud: boolean;
  /** True when the dispute was resolved through RDR (VAMP leaves it out). */
  rdr_resolved: boolean;
  /** Ground truth for tests and the demo: the merchant order (World.orders) this case belongs to, if any.
   *  The service learns it only by matching a pushed order; never render it as matched on its own. */
  source_order_id?: string;
}

export type PreventionSource = 'ethoca' | 'verifi' | 'tc40';
export type PreventionStatus = 'New' | 'Pending' | 'Complete';

export interface WorldPreventionAlert {
  prevention_guid: string;
  prevention_case_number: string;
  arn?: string;
  mid: string;
  card_brand: Network;
  card_first_6: string;
  card_last_4: string;
  amount: number;
  currency: string;
  merchant_descriptor: string;
  prevention_type: PreventionSource;
  /** ISO time the vendor issued it; prevention.new is emitted at it */
  prevention_at: string;
  transaction_at: string;
  statuses: Array<{ at: string; status: PreventionStatus }>;
  /** Ground truth: the merchant order (World.orders) this alert belongs to, if any (see WorldChargeback). */
  source_order_id?: string;
}

export interface WorldRdrAlert {
  rdr_guid: string;
  rdr_case_number: string;
  arn?: string;
  mid: string;
  card_brand: Network;
  card_first_6: string;
  card_last_4: string;
  amount: number;
  currency: string;
  merchant_descriptor: string;
  auth_code: string;
  /** ISO time it arrived; rdr.new is emitted at it */
  rdr_at: string;
  rdr_resolution: 'Accepted' | 'Declined';
  transaction_at: string;
  /** Ground truth: the merchant order (World.orders) this alert belongs to, if any. */
  source_order_id?: string;
}

export interface WorldOrderValidation {
  order_validation_guid: string;
  order_validation_type: 'order_insight' | 'consumer_clarity';
  /** ISO time it arrived; order_validation.new is emitted at it */
  received_at: string;
  transaction_at: string;
  mid: string;
  card_brand: Network;
  card_first_6: string;
  card_last_4: string;
  amount: number;
  currency: string;
  arn?: string;
  auth_code: string;
  /** Ground truth: the merchant order (World.orders) this request belongs to, if any. */
  source_order_id?: string;
}

/** A merchant order of the scenario, for the demo to push (in the order data interface's shape). */
export type WorldOrder = Record<string, unknown> & {
  order_id: string;
  order_date: string;
  order_total: string;
  currency: string;
  cc_first_6: string;
  cc_last_4: string;
  transaction_merchant_id: string;
};

export interface World {
  seed: number;
  /** ISO time the sandbox clock starts at */
  start: string;
  /** First day with data (YYYY-MM-DD) and the day after the last (exclusive) */
  from: string;
  until: string;
  mids: WorldMid[];
  daily: DailyStat[];
  chargebacks: WorldChargeback[];
  alerts: WorldPreventionAlert[];
  rdrs: WorldRdrAlert[];
  orderValidations: WorldOrderValidation[];
  orders: WorldOrder[];
}

/**
 * What the server knows about an entity matched to a pushed order (added by the server half; additive).
 * The server passes `matchOf(guid)` to renderReport: the guid is a chargeback_guid, prevention_guid,
 * rdr_guid or order_validation_guid; undefined until matched (at the request's `now`).
 */
export interface MatchInfo {
  order_id: string;
  /** The {id} the order data interface answered for the order. */
  order_guid: string;
  crm_account_guid: string;
  /** "first last" billing name of the order, when it was given */
  name?: string;
  /** first shipment's tracking number, when given */
  tracking_number?: string;
  /** ISO time the match happened */
  matched_at: string;
}
