// Event payloads pushed to webhooks: flat JSON objects, one union discriminated by event_type.
// An event type cbp does not know is not an error: it parses to the "unknown" variant and keeps the raw
// object, because the service's event set has changed over time (order.refund, chargeback.responded, ...).
import { z } from 'zod';
import { amount, cardBrand, cardFirst6, cardLast4, currency, date, dateTime, id, opt, text } from './common.ts';
import { EVENT_TYPES, PreventionTypeSchema, RdrSchema, SubscribableEventTypeSchema, type EventType } from './resources.ts';

const envelope = {
  event_guid: id,
  event_timestamp: dateTime,
};

const chargebackNewFields = {
  alternate_transaction_id: opt(text),
  amount,
  arn: opt(text),
  auth_code: opt(text),
  card_brand: opt(cardBrand),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  case_number: id,
  chargeback_date: opt(date),
  chargeback_guid: id,
  currency: opt(currency),
  date_received: opt(date),
  due_date: opt(date),
  mid: id,
  processor_transaction_date: opt(text),
  processor_transaction_id: opt(text),
  reason_code: opt(text),
  reason_description: opt(text),
};

const matchFields = {
  crm_account_guid: opt(id),
  order_guid: id,
  order_id: opt(text),
};

const orderValidationFields = {
  order_validation_type: text,
  order_validation_timestamp: opt(dateTime),
  order_validation_guid: id,
  transaction_timestamp: opt(dateTime),
  amount,
  currency: opt(currency),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  arn: opt(text),
  auth_code: opt(text),
  card_brand: opt(cardBrand),
};

const preventionFields = {
  amount,
  arn: opt(text),
  card_first_6: opt(cardFirst6),
  card_last_4: opt(cardLast4),
  currency: opt(currency),
  merchant_descriptor: opt(text),
  mid: opt(id),
  prevention_case_number: opt(id),
  prevention_guid: id,
  prevention_timestamp: opt(dateTime),
  prevention_type: PreventionTypeSchema,
  transaction_timestamp: opt(dateTime),
};

export const CHARGEBACK_RESULTS = ['won', 'lost', 'pre-arbitration'] as const;
const result = z
  .string()
  .transform((v) => v.trim().toLowerCase().replace(/[\s_]+/g, '-'))
  .pipe(z.enum(CHARGEBACK_RESULTS, { error: (i) => `expected won, lost or pre-arbitration, got ${JSON.stringify(i.input)}` }));

function ev<T extends EventType, S extends z.core.$ZodLooseShape>(type: T, shape: S) {
  return z.looseObject({ ...envelope, event_type: z.literal(type), ...shape });
}

export const ChargebackNewEventSchema = ev('chargeback.new', chargebackNewFields);
export const ChargebackMatchEventSchema = ev('chargeback.match', { ...chargebackNewFields, ...matchFields });
export const ChargebackResultEventSchema = ev('chargeback.result', {
  arn: opt(text),
  case_number: id,
  chargeback_guid: id,
  mid: id,
  result,
});
export const ChargebackDnfEventSchema = ev('chargeback.dnf', {
  arn: opt(text),
  case_number: id,
  chargeback_guid: id,
  mid: id,
  dnf_reason: opt(text),
  dnf_timestamp: opt(dateTime),
});
export const OrderValidationNewEventSchema = ev('order_validation.new', orderValidationFields);
export const OrderValidationMatchEventSchema = ev('order_validation.match', {
  ...orderValidationFields,
  ...matchFields,
  mid: opt(id),
});
export const PreventionNewEventSchema = ev('prevention.new', preventionFields);
export const PreventionMatchEventSchema = ev('prevention.match', { ...preventionFields, ...matchFields });
export const RdrNewEventSchema = ev('rdr.new', RdrSchema.shape);
export const RdrMatchEventSchema = ev('rdr.match', { ...RdrSchema.shape, ...matchFields });
export const RegistrationNewEventSchema = ev('registration.new', {
  subscribed_event_type: SubscribableEventTypeSchema,
});

export const KnownEventSchema = z.discriminatedUnion('event_type', [
  ChargebackNewEventSchema,
  ChargebackMatchEventSchema,
  ChargebackResultEventSchema,
  ChargebackDnfEventSchema,
  OrderValidationNewEventSchema,
  OrderValidationMatchEventSchema,
  PreventionNewEventSchema,
  PreventionMatchEventSchema,
  RdrNewEventSchema,
  RdrMatchEventSchema,
  RegistrationNewEventSchema,
]);
export type KnownEvent = z.infer<typeof KnownEventSchema>;

/** An event of a type cbp does not know: its identity, and the whole object as received. */
export interface UnknownEvent {
  event_type: 'unknown';
  received_event_type: string;
  event_guid: string;
  event_timestamp?: string;
  raw: Record<string, unknown>;
}
export type CbpEvent = KnownEvent | UnknownEvent;

/**
 * The spec names chargeback.responded as the event_type of both chargeback.result and chargeback.dnf
 * payloads, while its examples carry the specific names: tell them apart by their fields.
 */
export function normaliseEventType(raw: Record<string, unknown>): string {
  const t = typeof raw.event_type === 'string' ? raw.event_type.trim() : '';
  if (t === 'chargeback.responded') {
    if ('dnf_reason' in raw || 'dnf_timestamp' in raw) return 'chargeback.dnf';
    if ('result' in raw) return 'chargeback.result';
  }
  return t;
}

const KNOWN = new Set<string>(EVENT_TYPES);

export const EventSchema = z.unknown().transform((input, ctx): CbpEvent => {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    ctx.addIssue({ code: 'custom', message: 'expected an event: a JSON object', input });
    return z.NEVER;
  }
  const raw = input as Record<string, unknown>;
  const type = normaliseEventType(raw);
  if (KNOWN.has(type)) {
    const r = KnownEventSchema.safeParse({ ...raw, event_type: type });
    if (r.success) return r.data;
    for (const issue of r.error.issues) ctx.addIssue({ ...issue, code: 'custom', message: issue.message, path: issue.path } as never);
    return z.NEVER;
  }
  const guid = raw.event_guid;
  if ((typeof guid !== 'string' && typeof guid !== 'number') || String(guid).trim() === '') {
    ctx.addIssue({ code: 'custom', message: 'expected an event_guid', path: ['event_guid'], input: guid });
    return z.NEVER;
  }
  if (type === '') {
    ctx.addIssue({ code: 'custom', message: 'expected an event_type', path: ['event_type'], input: raw.event_type });
    return z.NEVER;
  }
  const ts = typeof raw.event_timestamp === 'string' ? dateTime.safeParse(raw.event_timestamp) : undefined;
  return {
    event_type: 'unknown',
    received_event_type: type,
    event_guid: String(guid).trim(),
    ...(ts?.success ? { event_timestamp: ts.data } : {}),
    raw,
  };
});
