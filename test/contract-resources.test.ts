// The events interface's resources and the token/error bodies, against the spec's tables.
import { describe, expect, it } from 'vitest';
import {
  ChargebackSchema,
  ErrorBodySchema,
  OrderSchema,
  OrderValidationSchema,
  PingResponseSchema,
  PreventionAlertSchema,
  SubscribeRequestSchema,
  SubscriptionListSchema,
  SubscriptionSchema,
  SubscriptionUpdateSchema,
  TokenResponseSchema,
  WebhookAuthSchema,
  SUBSCRIBABLE_EVENT_TYPES,
  EVENT_TYPES,
  safeParseWith,
} from '../contract/index.ts';
import { auth, chargeback, orderLookup, orderValidation, preventionAlert, subscriptionConfirmation } from './contract-fixtures.ts';

describe('subscriptions', () => {
  it('parses a subscription_confirmation with every field of the table', () => {
    expect(SubscriptionSchema.parse(subscriptionConfirmation)).toEqual(subscriptionConfirmation);
  });

  it('parses a list of subscriptions (array of subscription_confirmation)', () => {
    const list = SubscriptionListSchema.parse([subscriptionConfirmation, { ...subscriptionConfirmation, guid: 'sub_2', active: true }]);
    expect(list.map((s) => s.active)).toEqual([false, true]);
  });

  it('parses the auth object: username and password', () => {
    expect(WebhookAuthSchema.parse(auth)).toEqual(auth);
  });

  it('parses a subscribe request with email, url, event_type and auth', () => {
    const body = { email: 'ops@merchant.example', url: 'https://hooks.merchant.example/events', event_type: 'rdr.match', auth };
    expect(SubscribeRequestSchema.parse(body)).toEqual(body);
  });

  it('accepts a subscribe request for each of the 8 subscribable event types', () => {
    for (const t of SUBSCRIBABLE_EVENT_TYPES) {
      const r = SubscribeRequestSchema.safeParse({ email: 'a@b.example', url: 'https://h.example/e', event_type: t, auth });
      expect(r.success, t).toBe(true);
    }
  });

  it('rejects a subscribe request for order_validation.new, which is emitted but not subscribable', () => {
    const r = safeParseWith(SubscribeRequestSchema, { email: 'a@b.example', url: 'https://h.example/e', event_type: 'order_validation.new', auth });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.issues[0]).toContain('event_type');
      expect(r.issues[0]).toContain('"order_validation.new"');
      expect(r.issues[0]).toContain('expected one of the 8 subscribable event types');
    }
  });

  it('rejects subscribing to order_validation.match and registration.new as well', () => {
    for (const t of ['order_validation.match', 'registration.new']) {
      expect(SubscribeRequestSchema.safeParse({ email: 'a@b.example', url: 'https://h.example/e', event_type: t, auth }).success, t).toBe(false);
    }
  });

  it('keeps 8 subscribable types apart from the 11 emitted types', () => {
    expect(SUBSCRIBABLE_EVENT_TYPES).toHaveLength(8);
    expect(EVENT_TYPES).toHaveLength(11);
    expect(EVENT_TYPES.filter((t) => !(SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(t)).sort()).toEqual([
      'order_validation.match',
      'order_validation.new',
      'registration.new',
    ]);
  });

  it('parses a subscription_update with email, url, active and auth', () => {
    const body = { email: 'new@merchant.example', url: 'https://hooks.merchant.example/v2', active: true, auth };
    expect(SubscriptionUpdateSchema.parse(body)).toEqual(body);
  });

  it('parses a subscription_update that only switches active', () => {
    expect(SubscriptionUpdateSchema.parse({ active: false })).toEqual({ active: false });
  });

  it('rejects an empty subscription_update', () => {
    const r = safeParseWith(SubscriptionUpdateSchema, {});
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toContain('expected at least one of email, url, active, auth');
  });

  it('parses the ping answer {urls: [...]}', () => {
    expect(PingResponseSchema.parse({ urls: ['https://h.example/e'] })).toEqual({ urls: ['https://h.example/e'] });
  });
});

describe('lookup resources', () => {
  it('parses a chargeback with every field of the table', () => {
    expect(ChargebackSchema.parse(chargeback)).toEqual(chargeback);
  });

  it('parses a prevention alert with every field of the table', () => {
    expect(PreventionAlertSchema.parse(preventionAlert)).toEqual(preventionAlert);
  });

  it('parses each prevention_type: ethoca, verifi, tc40', () => {
    for (const t of ['ethoca', 'verifi', 'tc40']) expect(PreventionAlertSchema.parse({ ...preventionAlert, prevention_type: t }).prevention_type).toBe(t);
  });

  it('parses an order validation request with every field of the table (amount as a decimal string)', () => {
    expect(OrderValidationSchema.parse(orderValidation)).toEqual({ ...orderValidation, amount: 42.5 });
  });

  it('parses an order validation request whose card_first_6 is a number', () => {
    expect(OrderValidationSchema.parse({ ...orderValidation, card_first_6: 411111 }).card_first_6).toBe('411111');
  });

  it('parses an order lookup with every field of the table', () => {
    expect(OrderSchema.parse(orderLookup)).toEqual(orderLookup);
  });

  it('accepts a chargeback whose "if available" fields (arn) are absent, null or empty', () => {
    for (const arn of [undefined, null, '']) {
      const r = ChargebackSchema.parse({ ...chargeback, arn });
      expect(r.arn).toBeUndefined();
    }
  });
});

describe('token and error bodies', () => {
  it('parses the token answer {token}', () => {
    expect(TokenResponseSchema.parse({ token: 'eyJhbGciOi.x.y' })).toEqual({ token: 'eyJhbGciOi.x.y' });
  });

  it('rejects a token answer without a token', () => {
    expect(TokenResponseSchema.safeParse({}).success).toBe(false);
    expect(TokenResponseSchema.safeParse({ token: '' }).success).toBe(false);
  });

  it('parses the error body {error: true, message}', () => {
    expect(ErrorBodySchema.parse({ error: true, message: 'invalid authorization header' })).toEqual({
      error: true,
      message: 'invalid authorization header',
    });
  });

  it('parses an error body without a message', () => {
    expect(ErrorBodySchema.parse({ error: true })).toEqual({ error: true });
  });
});

describe('schemas against the spec tables', () => {
  const fields = (text: string) => text.trim().split(/\s+/).sort();

  it('subscription_confirmation, subscribe and subscription_update declare the spec fields', () => {
    expect(Object.keys(SubscriptionSchema.shape).sort()).toEqual(fields('guid email url event_type active created_at updated_at auth'));
    expect(Object.keys(SubscribeRequestSchema.shape).sort()).toEqual(fields('email url event_type auth'));
    expect(Object.keys(WebhookAuthSchema.shape).sort()).toEqual(fields('username password'));
  });

  it('chargeback declares the spec fields', () => {
    expect(Object.keys(ChargebackSchema.shape).sort()).toEqual(
      fields('amount arn card_brand card_first_6 card_last_4 case_number chargeback_date chargeback_guid currency date_received mid order_guid order_id reason_code'),
    );
  });

  it('prevention alert declares the spec fields', () => {
    expect(Object.keys(PreventionAlertSchema.shape).sort()).toEqual(
      fields(`amount arn card_brand card_first_6 card_last_4 currency merchant_descriptor mid order_guid order_id prevention_case_number
        prevention_guid prevention_timestamp prevention_type transaction_timestamp`),
    );
  });

  it('order validation request declares the spec fields', () => {
    expect(Object.keys(OrderValidationSchema.shape).sort()).toEqual(
      fields(`order_validation_type order_validation_timestamp order_validation_guid transaction_timestamp amount currency card_first_6
        card_last_4 arn auth_code card_brand order_guid order_id crm_account_guid mid`),
    );
  });

  it('order lookup declares the spec fields', () => {
    expect(Object.keys(OrderSchema.shape).sort()).toEqual(
      fields('order_guid crm_order_id mid card_first_6 card_last_4 card_brand amount currency billing_first_name billing_last_name order_date'),
    );
  });

  it('the fixtures carry every declared field', () => {
    expect(Object.keys(chargeback).sort()).toEqual(Object.keys(ChargebackSchema.shape).sort());
    expect(Object.keys(preventionAlert).sort()).toEqual(Object.keys(PreventionAlertSchema.shape).sort());
    expect(Object.keys(orderValidation).sort()).toEqual(Object.keys(OrderValidationSchema.shape).sort());
    expect(Object.keys(orderLookup).sort()).toEqual(Object.keys(OrderSchema.shape).sort());
  });
});

describe('subscription e-mail', () => {
  it('accepts intranet addresses such as ops@localhost, which the service can still mail', async () => {
    const { SubscribeRequestSchema } = await import('../contract/index.ts');
    const r = SubscribeRequestSchema.safeParse({
      email: 'ops@localhost', url: 'https://example.com/hook', event_type: 'chargeback.new', auth: { username: 'u', password: 'p' },
    });
    expect(r.success).toBe(true);
  });
});
