// Merchant orders of the world (World.orders), in the order data interface's shape: the order behind a case
// (same card, amount and time, so the demo's push lets the service match them) and ordinary sales with no
// case at all.
import { NETWORKS, type Network } from '../contract/common.ts';
import { DAY, HOUR, iso } from './calendar.ts';
import { type Card, UPPER_ALNUM, drawCard, ticketCents } from './payments.ts';
import { DEFAULT_MIX } from './rates.ts';
import type { Rng } from './rng.ts';
import type { Scenario } from './scenario.ts';
import type { WorldMid, WorldOrder } from './world.ts';

const FIRST = ['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth', 'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Carlos', 'Karen', 'Ahmed', 'Fatima', 'Wei', 'Mei', 'Olga', 'Ivan', 'Priya', 'Arjun', 'Amara', 'Kofi'];
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez', 'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee', 'Khan', 'Chen', 'Wang', 'Ivanova', 'Petrov', 'Patel', 'Singh', 'Okafor', 'Mensah'];
const CITIES: Array<[string, string, string]> = [['Austin', 'TX', '73301'], ['Denver', 'CO', '80202'], ['Portland', 'OR', '97201'], ['Columbus', 'OH', '43004'], ['Raleigh', 'NC', '27601'], ['Tampa', 'FL', '33601'], ['Madison', 'WI', '53703']];

/** A merchant order paid with the card, for `cents`, at atMs: the customer's name, address, shipment or
 *  proof of service and the gateway's fields are drawn from rng. */
export function drawOrder(rng: Rng, m: WorldMid, goods: 'physical' | 'digital', net: Network, c: Card, cents: number, atMs: number): WorldOrder {
  const first = rng.pick(FIRST);
  const last = rng.pick(LAST);
  const at = iso(atMs);
  const [city, state, postcode] = rng.pick(CITIES);
  const street = `${rng.int(10, 9999)} ${rng.pick(['Oak', 'Maple', 'Cedar', 'Pine', 'Elm', 'Lake', 'Hill'])} ${rng.pick(['St', 'Ave', 'Rd', 'Blvd'])}`;
  const total = (cents / 100).toFixed(2);
  const fulfillment =
    goods === 'physical'
      ? {
          shipments: [
            {
              shipping_method: rng.pick(['UPS Ground', 'USPS Priority', 'FedEx Home']),
              shipping_date: iso(atMs + rng.int(6, 72) * HOUR),
              tracking_number: `1Z${rng.chars(16, UPPER_ALNUM)}`,
              shipping_first_name: first,
              shipping_last_name: last,
              shipping_street_address: street,
              shipping_city: city,
              shipping_state: state,
              shipping_postcode: postcode,
              shipping_country: 'US',
            },
          ],
        }
      : { proof_of_service: [{ type: 'download', value: `licence ${rng.hex(12)} delivered ${at}` }] };
  return {
    order_id: `SO-${rng.hex(12).toUpperCase()}`,
    order_date: at,
    order_total: total,
    currency: m.currency ?? 'USD',
    order_status: 'Complete',
    transaction_merchant_id: m.mid,
    processor_id: m.gateways[0],
    cc_type: net,
    cc_first_6: c.first6,
    cc_last_4: c.last4,
    cc_exp_month: String(rng.int(1, 12)).padStart(2, '0'),
    cc_exp_year: String(new Date(atMs).getUTCFullYear() + rng.int(1, 5)),
    avs: rng.pick(['Y', 'Y', 'Y', 'A', 'Z', 'N']),
    cvv: rng.pick(['M', 'M', 'M', 'N']),
    customer_id: `cust-${rng.hex(10)}`,
    ip_address: `${rng.int(11, 223)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}`,
    email_address: `${first}.${last}${rng.digits(2)}@example.com`.toLowerCase(),
    customers_telephone: `+1555${rng.digits(7)}`,
    is_refund: 0,
    is_recurring: 0,
    is_chargeback: 0,
    is_fraud: 0,
    is_test_cc: 0,
    auth_id: rng.chars(6, UPPER_ALNUM),
    transaction_id: rng.digits(12),
    billing_first_name: first,
    billing_last_name: last,
    billing_street_address: street,
    billing_city: city,
    billing_state: state,
    billing_postcode: postcode,
    billing_country: 'US',
    fulfillment,
    products: [{ name: goods === 'physical' ? 'Item' : 'Digital licence', price: total, product_id: `p-${rng.int(100, 999)}`, product_qty: '1', sku: `SKU-${rng.digits(6)}` }],
  };
}

/** Orders with no case: ordinary sales from fromMs to the start (at least a day), spread over MIDs by volume
 *  and over networks by each MID's mix. */
export function drawUnrelatedOrders(root: Rng, sc: Scenario, mids: WorldMid[], fromMs: number, startMs: number, into: WorldOrder[]): void {
  const sms = sc.mids;
  const rng = root.fork('orders:unrelated');
  const weights = sms.map((m) => Math.max(1, m.monthly_transactions));
  const endMs = Math.max(fromMs + DAY, startMs);
  for (let i = 0; i < sc.orders; i++) {
    const k = rng.weighted(sms.map((_, j) => j), weights);
    const sm = sms[k];
    const mix = sm.mix ?? DEFAULT_MIX;
    const ws = NETWORKS.map((n) => mix[n] ?? 0);
    const net = rng.weighted(NETWORKS, ws.some((w) => w > 0) ? ws : ws.map(() => 1));
    const c = drawCard(rng, net);
    const atMs = rng.float(fromMs, endMs - 1000);
    into.push(drawOrder(rng, mids[k], sm.goods, net, c, ticketCents(rng, sm.average_ticket), atMs));
  }
}
