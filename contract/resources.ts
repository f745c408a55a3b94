// Subscriptions and the four lookup resources of the events interface.
import { z } from 'zod';
import { amount, cardBrand, cardFirst6, cardLast4, currency, date, dateTime, id, opt, text } from './common.ts';

/** The 8 event types a subscription can be created for. */
export const SUBSCRIBABLE_EVENT_TYPES = [
  'chargeback.new',
  'chargeback.match',
  'prevention.new',
  'prevention.match',
  'chargeback.result',
  'chargeback.dnf',
  'rdr.new',
  'rdr.match',
] as const;
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];
export const SubscribableEventTypeSchema = z.enum(SUBSCRIBABLE_EVENT_TYPES, {
  error: (i) => `expected one of the 8 subscribable event types (${SUBSCRIBABLE_EVENT_TYPES.join(', ')}), got ${JSON.stringify(i.input)}`,
});

/** The 11 event types the service emits. */
export const EVENT_TYPES = [
  'chargeback.new',
  'chargeback.match',
  'chargeback.result',
  'chargeback.dnf',
  'order_validation.new',
  'order_validation.match',
  'prevention.new',
  'prevention.match',
  'rdr.new',
  'rdr.match',
  'registration.new',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const EventTypeSchema = z.enum(EVENT_TYPES);

export const WebhookAuthSchema = z.looseObject({
  username: z.string().min(1, 'expected a username'),
  password: z.string().min(1, 'expected a password'),
});
export type WebhookAuth = z.infer<typeof WebhookAuthSchema>;

// Deliberately loose (local@domain): the service mails it, and intranet addresses like ops@localhost are real.
const email = z.string().trim().regex(/^[^@\s]+@[^@\s]+$/, 'expected an e-mail address such as ops@example.com');
const webhookUrl = z.string().trim().url('expected an absolute URL such as https://example.com/events');

/** subscribe (create request): email, url, event_type, auth. All four are required by cbp (decision). */
export const SubscribeRequestSchema = z.looseObject({
  email,
  url: webhookUrl,
  event_type: SubscribableEventTypeSchema,
  auth: WebhookAuthSchema,
});
export type SubscribeRequest = z.infer<typeof SubscribeRequestSchema>;

/** subscription_update: email, url, active, auth; any subset, at least one; event_type cannot change. */
export const SubscriptionUpdateSchema = z
  .looseObject({
    email: email.optional(),
    url: webhookUrl.optional(),
    active: z.boolean().optional(),
    auth: WebhookAuthSchema.optional(),
  })
  .refine((u) => u.email !== undefined || u.url !== undefined || u.active !== undefined || u.auth !== undefined, {
    message: 'expected at least one of email, url, active, auth',
  });
export type SubscriptionUpdate = z.infer<typeof SubscriptionUpdateSchema>;

/** subscription_confirmation. */
export const SubscriptionSchema = z.looseObject({
  guid: id,
  email: z.string(),
  url: z.string(),
  event_type: SubscribableEventTypeSchema,
  active: z.boolean(),
  created_at: dateTime,
  updated_at: dateTime,
  auth: WebhookAuthSchema.optional(),
});
export type Subscription = z.infer<typeof SubscriptionSchema>;

export const SubscriptionListSchema = z.array(SubscriptionSchema);

/** A field of a listed item, or undefined when it is missing or of another shape. */
const readable = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);

/**
 * One item of `GET /subscribe` read only as far as telling cbp's own from another consumer's (decision): the
 * service lists every consumer's subscriptions of the account, and another's may hold an event type cbp does
 * not know or fields in another shape, which are none of cbp's business. Each field is undefined when it
 * cannot be read; the rest of the item is dropped. cbp's own are then parsed with SubscriptionSchema.
 */
export const ListedSubscriptionSchema = z
  .object({
    guid: readable(id),
    url: readable(z.string()),
    email: readable(z.string()),
    event_type: readable(z.string()),
    active: readable(z.boolean()),
  })
  .catch({});
export type ListedSubscriptionFields = z.infer<typeof ListedSubscriptionSchema>;

export const PingResponseSchema = z.looseObject({ urls: z.array(z.string()) });
export type PingResponse = z.infer<typeof PingResponseSchema>;

/** GET /chargeback/{chargeback_guid} */
export const ChargebackSchema = z.looseObject({
  chargeback_guid: id,
  amount,
  arn: opt(text),
  card_brand: opt(cardBrand),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  case_number: id,
  chargeback_date: opt(date),
  currency: opt(currency),
  date_received: opt(date),
  mid: id,
  order_guid: opt(id),
  order_id: opt(text),
  reason_code: opt(text),
});
export type Chargeback = z.infer<typeof ChargebackSchema>;

export const PREVENTION_TYPES = ['ethoca', 'verifi', 'tc40'] as const;
export const PreventionTypeSchema = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .pipe(z.enum(PREVENTION_TYPES, { error: (i) => `expected one of ethoca, verifi, tc40, got ${JSON.stringify(i.input)}` }));

/** GET /prevention/{prevention_guid} */
export const PreventionAlertSchema = z.looseObject({
  prevention_guid: id,
  amount,
  arn: opt(text),
  card_brand: opt(cardBrand),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  currency: opt(currency),
  merchant_descriptor: opt(text),
  mid: opt(id),
  order_guid: opt(id),
  order_id: opt(text),
  prevention_case_number: opt(id),
  prevention_timestamp: opt(dateTime),
  prevention_type: PreventionTypeSchema,
  transaction_timestamp: opt(dateTime),
});
export type PreventionAlert = z.infer<typeof PreventionAlertSchema>;

/** GET /order_validation/{order_guid} (the parameter is the order validation request's identifier). */
export const OrderValidationSchema = z.looseObject({
  order_validation_guid: id,
  order_validation_type: text,
  order_validation_timestamp: opt(dateTime),
  transaction_timestamp: opt(dateTime),
  amount,
  currency: opt(currency),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  arn: opt(text),
  auth_code: opt(text),
  card_brand: opt(cardBrand),
  order_guid: opt(id),
  order_id: opt(text),
  crm_account_guid: opt(id),
  mid: opt(id),
});
export type OrderValidation = z.infer<typeof OrderValidationSchema>;

/** GET /order/{order_guid} */
export const OrderSchema = z.looseObject({
  order_guid: id,
  crm_order_id: opt(text),
  mid: opt(id),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  card_brand: opt(cardBrand),
  amount,
  currency: opt(currency),
  billing_first_name: opt(text),
  billing_last_name: opt(text),
  order_date: opt(dateTime),
});
export type Order = z.infer<typeof OrderSchema>;

/** RDR alert fields, carried by rdr.new and rdr.match. */
export const RdrSchema = z.looseObject({
  rdr_case_number: id,
  rdr_guid: id,
  rdr_date: opt(date),
  rdr_resolution: opt(
    z
      .string()
      .transform((v) => (v.trim().toLowerCase() === 'accepted' ? 'Accepted' : v.trim().toLowerCase() === 'declined' ? 'Declined' : v))
      .pipe(z.enum(['Accepted', 'Declined'], { error: 'expected Accepted or Declined' })),
  ),
  prevention_type: opt(z.literal('rdr', { error: 'expected "rdr"' })),
  transaction_date: opt(date),
  amount,
  arn: opt(text),
  auth_code: opt(text),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  currency: opt(currency),
  merchant_descriptor: opt(text),
});
export type Rdr = z.infer<typeof RdrSchema>;
