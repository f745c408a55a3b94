// Invalid input fails with a message naming the field, the value received and what was expected.
import { describe, expect, it } from 'vitest';
import {
  ChargebackSchema,
  EventSchema,
  MerchantOrderSchema,
  PreventionAlertSchema,
  SubscribeRequestSchema,
  SubscriptionSchema,
  formatIssues,
  safeParseWith,
} from '../contract/index.ts';
import { parseOrThrow } from '../lib/validate.ts';
import { ValidationError } from '../lib/errors.ts';
import { auth, chargeback, events, preventionAlert, subscriptionConfirmation } from './contract-fixtures.ts';

/** The one message for one bad input, through safeParseWith/formatIssues. */
function issuesOf(schema: Parameters<typeof safeParseWith>[0], input: unknown): string[] {
  const r = safeParseWith(schema, input);
  if (r.ok) throw new Error('expected the input to be rejected');
  return r.issues;
}

describe('invalid input', () => {
  it('names field, value and expectation for a wrong type (amount: true)', () => {
    expect(issuesOf(ChargebackSchema, { ...chargeback, amount: true })).toEqual([
      'amount: got true; expected an amount: a number or a decimal string such as "94.76"',
    ]);
  });

  it('names field, value and expectation for an amount that is not a number', () => {
    expect(issuesOf(ChargebackSchema, { ...chargeback, amount: '94,76' })).toEqual([
      'amount: got "94,76"; expected an amount: a number or a decimal string such as "94.76"',
    ]);
  });

  it('names field, value and expectation for an impossible date (2026-02-30)', () => {
    expect(issuesOf(ChargebackSchema, { ...chargeback, chargeback_date: '2026-02-30' })).toEqual([
      'chargeback_date: got "2026-02-30"; expected a date YYYY-MM-DD',
    ]);
  });

  it('names field, value and expectation for an impossible date-time (hour 24)', () => {
    const [msg] = issuesOf(PreventionAlertSchema, { ...preventionAlert, prevention_timestamp: '2026-03-04 24:00:00' });
    expect(msg).toBe('prevention_timestamp: got "2026-03-04 24:00:00"; expected a UTC date-time: YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD HH:MM:SS');
  });

  it('rejects a bare date where a date-time is required', () => {
    const [msg] = issuesOf(SubscriptionSchema, { ...subscriptionConfirmation, created_at: '2026-03-01' });
    expect(msg).toMatch(/^created_at: got "2026-03-01"; expected a UTC date-time/);
  });

  it('names field, value and expectation for a bad enum (prevention_type)', () => {
    const [msg] = issuesOf(PreventionAlertSchema, { ...preventionAlert, prevention_type: 'stripe' });
    expect(msg).toContain('prevention_type');
    expect(msg).toContain('"stripe"');
    expect(msg).toContain('ethoca, verifi, tc40');
  });

  it('names field, value and expectation for a bad card brand', () => {
    const [msg] = issuesOf(ChargebackSchema, { ...chargeback, card_brand: 'unionpay' });
    expect(msg).toBe('card_brand: got "unionpay"; expected a card brand (visa, mastercard, american_express, discover, diners, elo, paypal, jcb)');
  });

  it('names a missing required id (chargeback_guid)', () => {
    const { chargeback_guid: _g, ...rest } = chargeback;
    expect(issuesOf(ChargebackSchema, rest)).toEqual(['chargeback_guid: got nothing; expected a non-empty identifier (a string)']);
  });

  it('rejects an empty id', () => {
    expect(issuesOf(ChargebackSchema, { ...chargeback, mid: '  ' })).toEqual(['mid: got "  "; expected a non-empty identifier']);
  });

  it('names an id of the wrong type', () => {
    expect(issuesOf(ChargebackSchema, { ...chargeback, case_number: { n: 1 } })).toEqual([
      'case_number: got {"n":1}; expected a non-empty identifier (a string)',
    ]);
  });

  it('names a card_first_6 of the wrong length', () => {
    expect(issuesOf(ChargebackSchema, { ...chargeback, card_first_6: '41111' })).toEqual([
      'card_first_6: got "41111"; expected the first six card digits (a 6-digit number or string)',
    ]);
  });

  it('names a currency that is not ISO 4217', () => {
    const [msg] = issuesOf(ChargebackSchema, { ...chargeback, currency: 'dollars' });
    expect(msg).toBe('currency: got "dollars"; expected a three-letter ISO 4217 currency code such as USD');
  });

  it('names a bad e-mail and url in a subscribe request', () => {
    const msgs = issuesOf(SubscribeRequestSchema, { email: 'not-mail', url: 'hooks', event_type: 'chargeback.new', auth });
    expect(msgs).toEqual([
      'email: got "not-mail"; expected an e-mail address such as ops@example.com',
      'url: got "hooks"; expected an absolute URL such as https://example.com/events',
    ]);
  });

  it('names a missing auth object', () => {
    const msgs = issuesOf(SubscribeRequestSchema, { email: 'a@b.example', url: 'https://h.example/e', event_type: 'chargeback.new' });
    expect(msgs).toEqual(['auth: got nothing; expected object, received undefined']);
  });

  it('names the field of a known event type that is invalid', () => {
    expect(issuesOf(EventSchema, { ...events['chargeback.new'], due_date: '2026-13-01' })).toEqual([
      'due_date: got "2026-13-01"; expected a date YYYY-MM-DD',
    ]);
  });

  it('names a bad rdr_resolution', () => {
    const [msg] = issuesOf(EventSchema, { ...events['rdr.new'], rdr_resolution: 'Maybe' });
    expect(msg).toMatch(/^rdr_resolution: got "Maybe"; expected Accepted or Declined/);
  });

  it('reports every problem at once, not just the first', () => {
    expect(issuesOf(MerchantOrderSchema, { order_id: '', order_date: 'yesterday', is_refund: 2 })).toHaveLength(3);
  });

  it('formatIssues looks the value up in the original input', () => {
    const input = { ...chargeback, amount: 'lots' };
    const r = ChargebackSchema.safeParse(input);
    if (r.success) throw new Error('expected failure');
    expect(formatIssues(r.error, input)).toEqual(['amount: got "lots"; expected an amount: a number or a decimal string such as "94.76"']);
  });

  it('parseOrThrow throws a ValidationError whose message names what, field, value and expectation', () => {
    let caught: unknown;
    try {
      parseOrThrow(ChargebackSchema, { ...chargeback, date_received: '2026-02-30' }, 'chargeback CASE-1001');
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    const err = caught as ValidationError;
    expect(err.code).toBe('CBP_ERR_VALIDATION');
    expect(err.message).toContain('chargeback CASE-1001 is invalid');
    expect(err.message).toContain('date_received');
    expect(err.message).toContain('"2026-02-30"');
    expect(err.message).toContain('expected a date YYYY-MM-DD');
    expect(err.issues).toEqual(['date_received: got "2026-02-30"; expected a date YYYY-MM-DD']);
  });

  it('parseOrThrow returns the parsed, normalised value for valid input', () => {
    expect(parseOrThrow(ChargebackSchema, { ...chargeback, amount: '1.50' }, 'chargeback').amount).toBe(1.5);
  });

  it('never repeats a webhook password in a message', () => {
    const msgs = issuesOf(SubscribeRequestSchema, {
      email: 'a@b.example',
      url: 'https://h.example/e',
      event_type: 'chargeback.new',
      auth: { username: 'u', password: ['s3cr3t-pw'] },
    });
    expect(msgs.join('\n')).not.toContain('s3cr3t-pw');
    expect(msgs[0]).toMatch(/^auth\.password: got \(hidden\); expected string/);
  });

  it('never repeats a credential inside an object shown whole', () => {
    const msgs = issuesOf(SubscribeRequestSchema, {
      email: 'a@b.example',
      url: 'https://h.example/e',
      event_type: 'chargeback.new',
      auth: [{ username: 'u', password: 's3cr3t-pw' }],
    });
    expect(msgs[0]).toMatch(/^auth: got \[\{"username":"u","password":"\(hidden\)"\}\]; expected object/);
  });
});
