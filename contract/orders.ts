// The merchant order pushed to the order data interface (POST /order), and its answers.
// "All values are strings unless a type is given. Booleans are sent as 1 or 0."
import { z } from 'zod';
import { dateTime, flag, id, opt } from './common.ts';

/** A string field that also takes a number (order_total: 94.76) and sends it as a string. */
const str = z.union([z.string(), z.number()], { error: 'expected a string' }).transform((v) => String(v));
const money = z
  .union([z.string(), z.number()], { error: 'expected a decimal amount such as "94.76"' })
  .transform((v) => String(v).trim())
  .pipe(z.string().regex(/^-?\d+(\.\d+)?$/, 'expected a decimal amount such as "94.76"'));
const digits = (n: number, what: string) =>
  z
    .union([z.string(), z.number()], { error: `expected ${what}` })
    .transform((v) => String(v).trim())
    .pipe(z.string().regex(new RegExp(`^\\d{${n}}$`), `expected ${what}`));

export const ORDER_STATUSES = ['Complete', 'Refunded', 'Cancelled'] as const;
const orderStatus = z
  .string()
  .transform((v) => ORDER_STATUSES.find((s) => s.toLowerCase() === v.trim().toLowerCase()) ?? v)
  .pipe(z.enum(ORDER_STATUSES, { error: (i) => `expected Complete, Refunded or Cancelled, got ${JSON.stringify(i.input)}` }));

export const ShipmentSchema = z.looseObject({
  shipping_method: opt(str),
  shipping_date: opt(dateTime),
  tracking_number: opt(str),
  shipping_first_name: opt(str),
  shipping_last_name: opt(str),
  shipping_street_address: opt(str),
  shipping_street_address_2: opt(str),
  shipping_city: opt(str),
  shipping_state: opt(str),
  shipping_postcode: opt(str),
  shipping_country: opt(str),
});

export const ProofOfServiceSchema = z.looseObject({ type: str, value: str });

export const FulfillmentSchema = z.looseObject({
  shipments: z.array(ShipmentSchema).optional(),
  proof_of_service: z.array(ProofOfServiceSchema).optional(),
});

export const ProductSchema = z.looseObject({
  name: opt(str),
  price: opt(money),
  product_id: opt(str),
  product_qty: opt(str),
  sku: opt(str),
});

export const NoteSchema = z.looseObject({ timestamp: dateTime, note: str });

/**
 * Every field of the spec's table. Only order_id is required by the spec (it identifies the order on
 * update); cbp validates the type and format of every field that is present. See docs/spec-decisions.md.
 */
export const MerchantOrderSchema = z.looseObject({
  order_id: id,
  order_date: opt(dateTime),
  order_total: opt(money),
  sales_tax: opt(str),
  sales_tax_amount: opt(money),
  currency: opt(
    z
      .string()
      .transform((v) => v.trim().toUpperCase())
      .pipe(z.string().regex(/^[A-Z]{3}$/, 'expected a three-letter ISO 4217 currency code such as USD')),
  ),
  order_status: opt(orderStatus),
  transaction_merchant_id: opt(str),
  processor_id: opt(str),
  cc_type: opt(str),
  cc_first_6: opt(digits(6, 'the first six card digits')),
  cc_last_4: opt(digits(4, 'the last four card digits')),
  cc_exp_month: opt(str),
  cc_exp_year: opt(str),
  avs: opt(str),
  cvv: opt(str),
  eci: opt(str),
  customer_id: opt(str),
  ip_address: opt(str),
  email_address: opt(str),
  customers_telephone: opt(str),
  is_refund: opt(flag),
  refunded_to_date: opt(money),
  rma_number: opt(str),
  rma_reason: opt(str),
  is_recurring: opt(flag),
  recurring_date: z.preprocess((v) => (v === '' ? null : v), dateTime.nullable().optional()),
  is_chargeback: opt(flag),
  is_fraud: opt(flag),
  billing_cycle: opt(str),
  auth_id: opt(str),
  transaction_id: opt(str),
  billing_first_name: opt(str),
  billing_last_name: opt(str),
  billing_street_address: opt(str),
  billing_street_address_2: opt(str),
  billing_city: opt(str),
  billing_postcode: opt(str),
  billing_state: opt(str),
  billing_country: opt(str),
  affiliate: opt(str),
  sub_affiliate: opt(str),
  main_product_id: opt(str),
  main_product_qty: opt(str),
  is_test_cc: opt(flag),
  fulfillment: FulfillmentSchema.optional(),
  products: z.array(ProductSchema).optional(),
  notes: z.array(NoteSchema).optional(),
});
export type MerchantOrder = z.infer<typeof MerchantOrderSchema>;
export type MerchantOrderInput = z.input<typeof MerchantOrderSchema>;

/** Fields the service needs on a first push so a chargeback can match the order (cbp's choice). */
export const ORDER_CREATE_FIELDS = ['order_id', 'order_date', 'order_total'] as const;

export const DataAuthRequestSchema = z.looseObject({
  username: z.string().min(1, 'expected a username'),
  password: z.string().min(1, 'expected a password'),
});
export const DataAuthResponseSchema = z.looseObject({ authorization_key: z.string().min(1) });
export const OrderPushResponseSchema = z.looseObject({ id: id });
export type OrderPushResponse = z.infer<typeof OrderPushResponseSchema>;
