// The cases of one MID, network and month: chargebacks, prevention alerts (Ethoca, Verifi, TC40), RDR cases
// and order validation requests. Every case is drawn by drawCase(): when it arrives in the month, the card
// transaction it is about, the card, the amount and the ARN, then the fields of its kind, then (for a share of
// cases) the merchant order behind it. Each kind draws from a stream of its own, forked by a label naming
// the kind, MID, month and network, so one kind's count never moves another kind's values.
import type { Network } from '../contract/common.ts';
import type { ChargebackStatus } from '../contract/reporting.ts';
import { DAY, HOUR, type Month, iso, ymd } from './calendar.ts';
import type { Figures } from './figures.ts';
import { drawOrder } from './orders-builder.ts';
import { UPPER_ALNUM, drawArn, drawCard, ticketCents } from './payments.ts';
import { DNF_REASONS, REASON_POOLS, type ReasonCode } from './reason-codes.ts';
import type { Rng } from './rng.ts';
import type { ScenarioMid } from './scenario.ts';
import type { PreventionSource, StatusChange, WorldChargeback, WorldMid, WorldOrder, WorldOrderValidation, WorldPreventionAlert, WorldRdrAlert } from './world.ts';

/** Where the cases of the world go. */
export interface CaseLists {
  chargebacks: WorldChargeback[];
  alerts: WorldPreventionAlert[];
  rdrs: WorldRdrAlert[];
  ovs: WorldOrderValidation[];
  orders: WorldOrder[];
}

/** One MID, network and month, and what its cases are drawn from. */
export interface CaseScope {
  /** the world's stream: each kind of case forks its own from it */
  root: Rng;
  mid: WorldMid;
  sm: ScenarioMid;
  net: Network;
  month: Month;
  /** share of cases with a merchant order in World.orders (the scenario's order_share) */
  orderShare: number;
  out: CaseLists;
}

/** How a kind of case is drawn. */
interface CaseShape {
  /** days from the card transaction to the case: uniform in [min, max) */
  txDays: readonly [number, number];
  /** share of cases that carry an ARN */
  arnShare: number;
  /** share of cases for part of the order's amount (30-90% of it); none when left out */
  partialShare?: number;
}

/** The card payment as every record of a case has it, in the records' key order (the world's JSON keeps it). */
type Paid = Pick<WorldChargeback, 'mid' | 'card_brand' | 'card_first_6' | 'card_last_4' | 'amount' | 'currency'>;

/** What every case has, drawn by drawCase(). */
interface CaseDraw {
  /** when the case arrives, within the month */
  atMs: number;
  /** when the card transaction it is about happened */
  txMs: number;
  arn: string | undefined;
  /** MID, card and the case's amount (the order's, or part of it): spread into every record, as one unconditional
   *  spread of a fixed shape, which keeps the records in V8's fast mode (a conditional one would not) */
  paid: Paid;
}

/** A case record, which may get the merchant order behind it. */
type Linked = { source_order_id?: string };
/** Draws a kind's own fields (after the common ones) from the kind's stream and builds its record. */
type Build<T> = (rng: Rng, s: CaseScope, d: CaseDraw) => T;

// Most disputes are for the whole order; a few are partial, so amount matching cannot always work.
const CHARGEBACK: CaseShape = { txDays: [5, 75], arnShare: 0.9, partialShare: 0.05 };
const ALERTS: ReadonlyArray<[PreventionSource, CaseShape]> = [
  ['ethoca', { txDays: [2, 45], arnShare: 0.7 }],
  ['verifi', { txDays: [2, 45], arnShare: 0.9 }],
  ['tc40', { txDays: [2, 45], arnShare: 0.9 }],
];
const RDR: CaseShape = { txDays: [5, 60], arnShare: 0.9 };
const ORDER_VALIDATION: CaseShape = { txDays: [3, 50], arnShare: 0.8 };
/** Share of Visa disputes (with an ARN) also resolved through RDR. */
const RDR_RESOLVED_SHARE = 0.1;

/** The stream of one kind of case of the scope. */
const streamOf = (s: CaseScope, kind: string): Rng => s.root.fork(`${kind}:${s.mid.mid}:${s.month.key}:${s.net}`);

/**
 * One case: what every kind has, in this order from rng (arrival, transaction, card, order amount, partial
 * amount, ARN), then `build` draws the fields of its kind, then a share of cases get the merchant order
 * behind them (same card, the whole order's amount, at the transaction's time).
 */
function drawCase<T extends Linked>(s: CaseScope, rng: Rng, shape: CaseShape, build: Build<T>): T {
  const atMs = rng.float(s.month.startMs, s.month.endMs - 1000);
  const txMs = atMs - rng.float(shape.txDays[0], shape.txDays[1]) * DAY;
  const card = drawCard(rng, s.net);
  const orderCents = ticketCents(rng, s.sm.average_ticket);
  const cents = shape.partialShare !== undefined && rng.bool(shape.partialShare) ? Math.max(100, Math.round(orderCents * rng.float(0.3, 0.9))) : orderCents;
  const arn = rng.bool(shape.arnShare) ? drawArn(rng) : undefined;
  const paid: Paid = { mid: s.mid.mid, card_brand: s.net, card_first_6: card.first6, card_last_4: card.last4, amount: cents / 100, currency: s.mid.currency ?? 'USD' };
  const x = build(rng, s, { atMs, txMs, arn, paid });
  if (rng.bool(s.orderShare)) {
    const o = drawOrder(rng, s.mid, s.sm.goods, s.net, card, orderCents, txMs);
    s.out.orders.push(o);
    x.source_order_id = o.order_id;
  }
  return x;
}

/** Every case of the scope's month, kind by kind, as many as its figures say. */
export function drawCases(s: CaseScope, f: Figures): void {
  drawChargebacks(s, f);
  for (const [kind, shape] of ALERTS) drawKind(s, `alert:${kind}`, f[kind], shape, s.out.alerts, (rng, sc, d) => preventionAlert(rng, sc, kind, d));
  drawKind(s, 'rdr', f.rdr, RDR, s.out.rdrs, rdrCase);
  drawKind(s, 'ov', f.ov, ORDER_VALIDATION, s.out.ovs, orderValidation);
}

/** `count` cases of one kind, from the kind's own stream. */
function drawKind<T extends Linked>(s: CaseScope, kind: string, count: number, shape: CaseShape, into: T[], build: Build<T>): void {
  const rng = streamOf(s, kind);
  for (let i = 0; i < count; i++) into.push(drawCase(s, rng, shape, build));
}

/** Chargebacks, the fraud ones first; a share of Visa disputes is also resolved through RDR. */
function drawChargebacks(s: CaseScope, f: Figures): void {
  const rng = streamOf(s, 'cb');
  const pool = REASON_POOLS[s.net];
  for (let i = 0; i < f.cb; i++) {
    const rc = i < f.fraud ? rng.weighted(pool.fraud, pool.fraudW) : rng.weighted(pool.other, pool.otherW);
    const cb = drawCase(s, rng, CHARGEBACK, (r, sc, d) => chargeback(r, sc, rc, d));
    s.out.chargebacks.push(cb);
    if (s.net === 'visa' && cb.arn && !f.rdrPinned) resolveThroughRdr(s, cb);
  }
}

function chargeback(rng: Rng, s: CaseScope, rc: ReasonCode, d: CaseDraw): WorldChargeback {
  const { statuses, dnf_reason } = chargebackStatuses(rng, d.atMs);
  return {
    chargeback_guid: rng.id('cb'),
    case_number: d.arn && rng.bool(0.1) ? d.arn : rng.digits(14),
    arn: d.arn,
    ...d.paid,
    reason_code: rc.code,
    reason_description: rc.description,
    chargeback_date: ymd(d.atMs - rng.int(0, 3) * DAY),
    received_at: iso(d.atMs),
    due_date: ymd(d.atMs + 20 * DAY),
    transaction_at: iso(d.txMs),
    auth_code: rng.chars(6, UPPER_ALNUM),
    processor_transaction_id: rng.digits(12),
    alternate_transaction_id: `txn_${rng.hex(16)}`,
    statuses,
    dnf_reason,
    fraud: rc.fraud,
    rdr_resolved: false,
    source_order_id: undefined,
  };
}

/** A chargeback's life: New at receipt, then Did Not Fight, or Pending and a result (docs/spec-decisions.md). */
function chargebackStatuses(rng: Rng, receivedMs: number): { statuses: StatusChange[]; dnf_reason?: string } {
  const s: StatusChange[] = [{ at: iso(receivedMs), status: 'New' }];
  const x = rng.next();
  if (x < 0.12) {
    s.push({ at: iso(receivedMs + rng.float(2, 10) * DAY), status: 'Did Not Fight' });
    return { statuses: s, dnf_reason: rng.pick(DNF_REASONS) };
  }
  const pendingMs = receivedMs + rng.float(1, 4) * DAY;
  s.push({ at: iso(pendingMs), status: 'Pending' });
  const y = rng.next();
  const outcomeMs = pendingMs + rng.float(30, 60) * DAY;
  let result: ChargebackStatus;
  if (y < 0.05) result = 'Result Unobtainable';
  else if (y < 0.5) result = 'Won';
  else if (y < 0.85) result = 'Lost';
  else result = 'Pre-Arbitration';
  s.push({ at: iso(outcomeMs), status: result });
  if (result === 'Pre-Arbitration') s.push({ at: iso(outcomeMs + rng.float(20, 40) * DAY), status: rng.bool(0.5) ? 'Won' : 'Lost' });
  return { statuses: s };
}

/**
 * A share of Visa disputes is resolved through RDR: the service reports the dispute and an RDR case with
 * its ARN, Accepted, shortly before (never before the dispute's month); VAMP does not count them (docs/ratios.md).
 * Drawn from a fork of its own, so every other value of the world is what it was without it.
 */
function resolveThroughRdr(s: CaseScope, cb: WorldChargeback): void {
  const rng = s.root.fork(`rdr-resolved:${cb.chargeback_guid}`);
  if (!rng.bool(RDR_RESOLVED_SHARE)) return;
  cb.rdr_resolved = true;
  s.out.rdrs.push({
    rdr_guid: rng.id('rdr'),
    rdr_case_number: `RDR${rng.digits(12)}`,
    arn: cb.arn,
    mid: cb.mid,
    card_brand: cb.card_brand,
    card_first_6: cb.card_first_6,
    card_last_4: cb.card_last_4,
    amount: cb.amount,
    currency: cb.currency,
    merchant_descriptor: s.mid.merchant_descriptor,
    auth_code: cb.auth_code,
    // Within the dispute's month: a neighbouring month may pin its RDR count, and the first starts the world.
    rdr_at: iso(Math.max(s.month.startMs, Date.parse(cb.received_at) - rng.float(1, 36) * HOUR)),
    rdr_resolution: 'Accepted',
    transaction_at: cb.transaction_at,
    source_order_id: cb.source_order_id,
  });
}

/** A prevention alert, New -> Pending -> Complete within days. */
function preventionAlert(rng: Rng, s: CaseScope, kind: PreventionSource, d: CaseDraw): WorldPreventionAlert {
  const pendingMs = d.atMs + rng.float(1, 24) * HOUR;
  const completeMs = pendingMs + rng.float(0.5, 4) * DAY;
  const caseNo = kind === 'ethoca' ? `ETH${rng.chars(17, UPPER_ALNUM)}` : kind === 'verifi' ? `VRF${rng.digits(12)}` : d.arn && rng.bool(0.3) ? d.arn : `TC40${rng.digits(12)}`;
  return {
    prevention_guid: rng.id('pre'),
    prevention_case_number: caseNo,
    arn: d.arn,
    ...d.paid,
    merchant_descriptor: s.mid.merchant_descriptor,
    prevention_type: kind,
    prevention_at: iso(d.atMs),
    transaction_at: iso(d.txMs),
    statuses: [
      { at: iso(d.atMs), status: 'New' },
      { at: iso(pendingMs), status: 'Pending' },
      { at: iso(completeMs), status: 'Complete' },
    ],
    source_order_id: undefined,
  };
}

/** An RDR case, Accepted or Declined when it arrives. */
function rdrCase(rng: Rng, s: CaseScope, d: CaseDraw): WorldRdrAlert {
  return {
    rdr_guid: rng.id('rdr'),
    rdr_case_number: `RDR${rng.digits(12)}`,
    arn: d.arn,
    ...d.paid,
    merchant_descriptor: s.mid.merchant_descriptor,
    auth_code: rng.chars(6, UPPER_ALNUM),
    rdr_at: iso(d.atMs),
    rdr_resolution: rng.bool(0.85) ? 'Accepted' : 'Declined',
    transaction_at: iso(d.txMs),
    source_order_id: undefined,
  };
}

/** An order validation request (Order Insight or Consumer Clarity). */
function orderValidation(rng: Rng, s: CaseScope, d: CaseDraw): WorldOrderValidation {
  return {
    order_validation_guid: rng.id('ov'),
    order_validation_type: rng.bool(0.7) ? 'order_insight' : 'consumer_clarity',
    received_at: iso(d.atMs),
    transaction_at: iso(d.txMs),
    ...d.paid,
    arn: d.arn,
    auth_code: rng.chars(6, UPPER_ALNUM),
    source_order_id: undefined,
  };
}
