// Event payloads: one union discriminated by event_type, plus an "unknown" variant that keeps the raw object.
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, EventSchema, KnownEventSchema, normaliseEventType, safeParseWith, type CbpEvent } from '../contract/index.ts';
import { events } from './contract-fixtures.ts';

describe('event payloads', () => {
  it('has a valid fixture for each of the 11 emitted event types', () => {
    expect(Object.keys(events).sort()).toEqual([...EVENT_TYPES].sort());
  });

  for (const type of EVENT_TYPES) {
    it(`parses a ${type} payload with every field of the events table, unchanged`, () => {
      const payload = events[type];
      const r = safeParseWith(EventSchema, payload);
      expect(r.ok ? [] : r.issues).toEqual([]);
      if (r.ok) {
        expect(r.value.event_type).toBe(type);
        expect(r.value).toEqual(payload);
      }
    });
  }

  it('picks the variant by event_type (a discriminated union)', () => {
    const e = EventSchema.parse(events['chargeback.result']) as CbpEvent;
    if (e.event_type !== 'chargeback.result') throw new Error(`wrong variant ${e.event_type}`);
    expect(e.result).toBe('won');
    expect(KnownEventSchema.parse(events['rdr.new']).event_type).toBe('rdr.new');
  });

  it('parses an unknown event type to the "unknown" variant that keeps the raw object', () => {
    const raw = { event_guid: 'evt_x1', event_timestamp: '2026-03-01 10:00:00', event_type: 'order.refund', refund_amount: '5.00', nested: { a: 1 } };
    const e = EventSchema.parse(raw) as CbpEvent;
    expect(e).toEqual({
      event_type: 'unknown',
      received_event_type: 'order.refund',
      event_guid: 'evt_x1',
      event_timestamp: '2026-03-01T10:00:00Z',
      raw,
    });
  });

  it('parses chargeback.error (announced, not in the spec) as unknown rather than rejecting it', () => {
    const e = EventSchema.parse({ event_guid: 'evt_x2', event_type: 'chargeback.error', whatever: true }) as CbpEvent;
    expect(e.event_type).toBe('unknown');
  });

  it('rejects an unknown event without an event_guid, naming the field', () => {
    const r = safeParseWith(EventSchema, { event_type: 'order.refund' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^event_guid: got nothing; expected an event_guid/);
  });

  it('rejects a payload that is not an object', () => {
    for (const v of [null, 'chargeback.new', [events['chargeback.new']]]) {
      const r = safeParseWith(EventSchema, v);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.issues[0]).toContain('expected an event: a JSON object');
    }
  });

  it('rejects registration.new for a type that cannot be subscribed', () => {
    const r = safeParseWith(EventSchema, { ...events['registration.new'], subscribed_event_type: 'order_validation.new' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^subscribed_event_type: got "order_validation.new"; expected one of the 8 subscribable/);
  });

  it('rejects a .match event without its order_guid', () => {
    const { order_guid: _drop, ...rest } = events['chargeback.match'];
    const r = safeParseWith(EventSchema, rest);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues).toEqual(['order_guid: got nothing; expected a non-empty identifier (a string)']);
  });
});

describe('chargeback.responded', () => {
  it('reads a chargeback.result payload whose event_type says chargeback.responded as chargeback.result', () => {
    const e = EventSchema.parse({ ...events['chargeback.result'], event_type: 'chargeback.responded' }) as CbpEvent;
    expect(e.event_type).toBe('chargeback.result');
    expect(e).toMatchObject({ result: 'won', chargeback_guid: events['chargeback.result'].chargeback_guid });
  });

  it('reads a chargeback.dnf payload whose event_type says chargeback.responded as chargeback.dnf', () => {
    const e = EventSchema.parse({ ...events['chargeback.dnf'], event_type: 'chargeback.responded' }) as CbpEvent;
    expect(e.event_type).toBe('chargeback.dnf');
    expect(e).toMatchObject({ dnf_reason: 'Amount below threshold', dnf_timestamp: '2026-04-01T23:00:00Z' });
  });

  it('keeps a chargeback.responded payload with neither result nor dnf fields as unknown', () => {
    expect(normaliseEventType({ event_type: 'chargeback.responded' })).toBe('chargeback.responded');
    const e = EventSchema.parse({ event_guid: 'evt_r', event_type: 'chargeback.responded' }) as CbpEvent;
    expect(e.event_type).toBe('unknown');
  });

  it('normalises each result spelling to won, lost or pre-arbitration', () => {
    for (const [given, want] of [['Won', 'won'], ['LOST', 'lost'], ['Pre-Arbitration', 'pre-arbitration'], ['pre_arbitration', 'pre-arbitration']]) {
      expect((EventSchema.parse({ ...events['chargeback.result'], result: given }) as { result: string }).result).toBe(want);
    }
  });
});

// The spec's events table, field by field (besides event_guid, event_timestamp, event_type).
const CB_NEW = 'alternate_transaction_id amount arn auth_code card_brand card_first_6 card_last_4 case_number chargeback_date chargeback_guid currency date_received due_date mid processor_transaction_date processor_transaction_id reason_code reason_description';
const OV_NEW = 'order_validation_type order_validation_timestamp order_validation_guid transaction_timestamp amount currency card_first_6 card_last_4 arn auth_code card_brand';
const PR_NEW = 'amount arn card_first_6 card_last_4 currency merchant_descriptor mid prevention_case_number prevention_guid prevention_timestamp prevention_type transaction_timestamp';
const RDR_NEW = 'amount arn auth_code card_first_6 card_last_4 currency merchant_descriptor rdr_case_number rdr_guid rdr_date rdr_resolution prevention_type transaction_date';
const SPEC_EVENT_FIELDS: Record<string, string> = {
  'chargeback.new': CB_NEW,
  'chargeback.match': `${CB_NEW} crm_account_guid order_guid order_id`,
  'chargeback.result': 'arn case_number chargeback_guid mid result',
  'chargeback.dnf': 'arn case_number chargeback_guid mid dnf_reason dnf_timestamp',
  'order_validation.new': OV_NEW,
  'order_validation.match': `${OV_NEW} order_guid order_id crm_account_guid mid`,
  'prevention.new': PR_NEW,
  'prevention.match': `${PR_NEW} crm_account_guid order_guid order_id`,
  'rdr.new': RDR_NEW,
  'rdr.match': `${RDR_NEW} order_guid order_id crm_account_guid`,
  'registration.new': 'subscribed_event_type',
};

describe('event schemas against the spec table', () => {
  for (const type of EVENT_TYPES) {
    it(`declares every ${type} field of the spec, and the fixture carries each`, () => {
      const option = KnownEventSchema.options.find((o) => o.shape.event_type.value === type);
      expect(option, type).toBeDefined();
      const want = ['event_guid', 'event_timestamp', 'event_type', ...SPEC_EVENT_FIELDS[type].split(' ')].sort();
      expect(Object.keys(option!.shape).sort()).toEqual(want);
      expect(Object.keys(events[type]).sort()).toEqual(want);
    });
  }
});
