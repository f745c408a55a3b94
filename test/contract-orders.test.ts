// The merchant Order of the order data interface (POST /order) and its auth / answer bodies.
import { describe, expect, it } from 'vitest';
import {
  DataAuthRequestSchema,
  DataAuthResponseSchema,
  FulfillmentSchema,
  MerchantOrderSchema,
  NoteSchema,
  ProductSchema,
  ProofOfServiceSchema,
  ShipmentSchema,
  OrderPushResponseSchema,
  safeParseWith,
} from '../contract/index.ts';
import { merchantOrder } from './contract-fixtures.ts';

describe('merchant order', () => {
  it('parses an order with every field of the table, fulfillment, products and notes, unchanged', () => {
    const r = safeParseWith(MerchantOrderSchema, merchantOrder);
    expect(r.ok ? [] : r.issues).toEqual([]);
    if (r.ok) expect(r.value).toEqual(merchantOrder);
  });

  it('declares every field of the spec table, and no other', () => {
    const spec = `order_id order_date order_total sales_tax sales_tax_amount currency order_status transaction_merchant_id
      processor_id cc_type cc_first_6 cc_last_4 cc_exp_month cc_exp_year avs cvv eci customer_id ip_address email_address
      customers_telephone is_refund refunded_to_date rma_number rma_reason is_recurring recurring_date is_chargeback is_fraud
      billing_cycle auth_id transaction_id billing_first_name billing_last_name billing_street_address billing_street_address_2
      billing_city billing_postcode billing_state billing_country affiliate sub_affiliate main_product_id main_product_qty
      is_test_cc fulfillment products notes`.split(/\s+/).sort();
    expect(Object.keys(MerchantOrderSchema.shape).sort()).toEqual(spec);
    expect(Object.keys(merchantOrder).sort()).toEqual(spec);
  });

  it('declares every shipments, proof_of_service, products and notes item field of the spec', () => {
    expect(Object.keys(ShipmentSchema.shape).sort()).toEqual(
      `shipping_method shipping_date tracking_number shipping_first_name shipping_last_name shipping_street_address
       shipping_street_address_2 shipping_city shipping_state shipping_postcode shipping_country`.split(/\s+/).sort(),
    );
    expect(Object.keys(ProofOfServiceSchema.shape).sort()).toEqual(['type', 'value']);
    expect(Object.keys(ProductSchema.shape).sort()).toEqual(['name', 'price', 'product_id', 'product_qty', 'sku']);
    expect(Object.keys(NoteSchema.shape).sort()).toEqual(['note', 'timestamp']);
    expect(Object.keys(FulfillmentSchema.shape).sort()).toEqual(['proof_of_service', 'shipments']);
  });

  it('sends booleans as 1 or 0 whatever spelling they were given in', () => {
    const o = MerchantOrderSchema.parse({ order_id: 'o1', is_refund: true, is_recurring: '0', is_chargeback: '1', is_fraud: false, is_test_cc: 'true' });
    expect(o).toMatchObject({ is_refund: 1, is_recurring: 0, is_chargeback: 1, is_fraud: 0, is_test_cc: 1 });
  });

  it('accepts an update carrying only order_id and the changed fields', () => {
    const o = MerchantOrderSchema.parse({ order_id: 'INV-2001', order_status: 'Refunded', is_refund: 1, refunded_to_date: '94.76' });
    expect(o).toEqual({ order_id: 'INV-2001', order_status: 'Refunded', is_refund: 1, refunded_to_date: '94.76' });
  });

  it('accepts each order_status: Complete, Refunded, Cancelled', () => {
    for (const s of ['Complete', 'Refunded', 'Cancelled']) expect(MerchantOrderSchema.parse({ order_id: 'o', order_status: s }).order_status).toBe(s);
  });

  it('normalises order_date written as YYYY-MM-DD HH:MM:SS (the examples) to YYYY-MM-DDTHH:MM:SSZ', () => {
    expect(MerchantOrderSchema.parse({ order_id: 'o', order_date: '2026-02-10 14:00:00' }).order_date).toBe('2026-02-10T14:00:00Z');
  });

  it('accepts recurring_date null ("may be null")', () => {
    expect(MerchantOrderSchema.parse({ order_id: 'o', recurring_date: null }).recurring_date).toBeNull();
  });

  it('sends order_total given as a number as a string', () => {
    expect(MerchantOrderSchema.parse({ order_id: 'o', order_total: 94.76 }).order_total).toBe('94.76');
  });

  it('keeps proof_of_service pairs in the order given', () => {
    const pairs = Array.from({ length: 5 }, (_, i) => ({ type: `t${i}`, value: `v${i}` }));
    expect(MerchantOrderSchema.parse({ order_id: 'o', fulfillment: { proof_of_service: pairs } }).fulfillment?.proof_of_service).toEqual(pairs);
  });

  it('rejects an order without order_id, naming the field', () => {
    const { order_id: _drop, ...rest } = merchantOrder;
    const r = safeParseWith(MerchantOrderSchema, rest);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual(['order_id: got nothing; expected a non-empty identifier (a string)']);
  });

  it('rejects a boolean that is neither 1 nor 0', () => {
    const r = safeParseWith(MerchantOrderSchema, { order_id: 'o', is_fraud: 'maybe' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual(['is_fraud: got "maybe"; expected a boolean sent as 1 or 0']);
  });

  it('rejects an unknown order_status', () => {
    const r = safeParseWith(MerchantOrderSchema, { order_id: 'o', order_status: 'Shipped' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^order_status: got "Shipped"; expected Complete, Refunded or Cancelled/);
  });

  it('rejects a bad shipping_date inside fulfillment.shipments, naming the nested path', () => {
    const r = safeParseWith(MerchantOrderSchema, { order_id: 'o', fulfillment: { shipments: [{ shipping_date: '2026-02-30 10:00:00' }] } });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^fulfillment\.shipments\.0\.shipping_date: got "2026-02-30 10:00:00"; expected a UTC date-time/);
  });

  it('rejects a note without its timestamp', () => {
    const r = safeParseWith(MerchantOrderSchema, { order_id: 'o', notes: [{ note: 'x' }] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^notes\.0\.timestamp: got nothing; expected/);
  });

  it('parses the data interface auth request, key answer and order answer', () => {
    expect(DataAuthRequestSchema.parse({ username: 'u', password: 'p' })).toEqual({ username: 'u', password: 'p' });
    expect(DataAuthResponseSchema.parse({ authorization_key: 'k1' })).toEqual({ authorization_key: 'k1' });
    expect(OrderPushResponseSchema.parse({ id: 'svc-123' })).toEqual({ id: 'svc-123' });
  });

  it('never repeats a password in a validation message', () => {
    const r = safeParseWith(DataAuthRequestSchema, { username: 'u', password: 12345678 });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.issues[0]).toMatch(/^password: got \(hidden\); /);
      expect(r.issues.join('\n')).not.toContain('12345678');
    }
  });
});
