// Each tolerance the spec's two readings call for, one test each.
import { describe, expect, it } from 'vitest';
import {
  ChargebackRecordSchema,
  ChargebackSchema,
  EventSchema,
  MidRecordSchema,
  OrderValidationSchema,
  PreventionAlertSchema,
  amount,
  cardBrand,
  cardFirst6,
  date,
  dateTime,
  normaliseBrand,
  toIsoUtc,
  type CbpEvent,
} from '../contract/index.ts';
import { chargeback, chargebackRecord, events, midRecord, orderValidation, preventionAlert } from './contract-fixtures.ts';

describe('tolerance', () => {
  it('accepts an amount as a number', () => {
    expect(ChargebackSchema.parse({ ...chargeback, amount: 94.76 }).amount).toBe(94.76);
  });

  it('accepts an amount as a decimal string', () => {
    expect(ChargebackSchema.parse({ ...chargeback, amount: '94.76' }).amount).toBe(94.76);
    expect(amount.parse('100')).toBe(100);
    expect(amount.parse('-5.5')).toBe(-5.5);
  });

  it('accepts card_first_6 as a number', () => {
    expect(OrderValidationSchema.parse({ ...orderValidation, card_first_6: 555555 }).card_first_6).toBe('555555');
  });

  it('accepts card_first_6 as a string', () => {
    expect(OrderValidationSchema.parse({ ...orderValidation, card_first_6: '555555' }).card_first_6).toBe('555555');
  });

  it('left-pads a card_first_6 number that lost its leading zeros', () => {
    expect(cardFirst6.parse(12345)).toBe('012345');
  });

  it('accepts a date-time written YYYY-MM-DDTHH:MM:SSZ and keeps it', () => {
    expect(dateTime.parse('2026-03-04T08:30:00Z')).toBe('2026-03-04T08:30:00Z');
  });

  it('accepts a date-time written YYYY-MM-DD HH:MM:SS as UTC and normalises it to ISO 8601 UTC', () => {
    expect(dateTime.parse('2026-03-04 08:30:00')).toBe('2026-03-04T08:30:00Z');
    expect(PreventionAlertSchema.parse({ ...preventionAlert, prevention_timestamp: '2026-03-04 08:30:00' }).prevention_timestamp).toBe(
      '2026-03-04T08:30:00Z',
    );
  });

  it('converts a date-time with an offset or a fraction to UTC', () => {
    expect(dateTime.parse('2026-03-04T10:30:00+02:00')).toBe('2026-03-04T08:30:00Z');
    expect(dateTime.parse('2026-03-04T08:30:00.123Z')).toBe('2026-03-04T08:30:00Z');
    expect(toIsoUtc('2026-01-01T00:30:00+01:00')).toBe('2025-12-31T23:30:00Z');
  });

  it('normalises the event_timestamp of an event written with a space', () => {
    const e = EventSchema.parse({ ...events['prevention.new'], event_timestamp: '2026-03-04 08:30:05' }) as CbpEvent;
    expect(e.event_timestamp).toBe('2026-03-04T08:30:05Z');
  });

  it('accepts a date written YYYY-MM-DD', () => {
    expect(date.parse('2026-03-02')).toBe('2026-03-02');
    expect(ChargebackSchema.parse(chargeback).chargeback_date).toBe('2026-03-02');
  });

  it('accepts a leap day in a leap year', () => {
    expect(date.parse('2028-02-29')).toBe('2028-02-29');
  });

  it('reads chargeback.result payloads whose event_type says chargeback.responded', () => {
    expect((EventSchema.parse({ ...events['chargeback.result'], event_type: 'chargeback.responded' }) as CbpEvent).event_type).toBe(
      'chargeback.result',
    );
  });

  it('reads chargeback.dnf payloads whose event_type says chargeback.responded', () => {
    expect((EventSchema.parse({ ...events['chargeback.dnf'], event_type: 'chargeback.responded' }) as CbpEvent).event_type).toBe(
      'chargeback.dnf',
    );
  });

  it('reads the card network written mastercard', () => {
    expect(cardBrand.parse('mastercard')).toBe('mastercard');
  });

  it('reads the card network written MasterCard', () => {
    expect(cardBrand.parse('MasterCard')).toBe('mastercard');
    expect(ChargebackRecordSchema.parse({ ...chargebackRecord, card_type: 'MasterCard' }).card_type).toBe('mastercard');
  });

  it('reads the card network written master_card', () => {
    expect(cardBrand.parse('master_card')).toBe('mastercard');
    expect(ChargebackSchema.parse({ ...chargeback, card_brand: 'master_card' }).card_brand).toBe('mastercard');
  });

  it('reads other network spellings (Master Card, amex, American Express)', () => {
    expect(normaliseBrand('Master Card')).toBe('mastercard');
    expect(normaliseBrand('amex')).toBe('american_express');
    expect(normaliseBrand('American Express')).toBe('american_express');
  });

  it('keeps extra fields of a resource, not stripped', () => {
    expect(ChargebackSchema.parse({ ...chargeback, new_field: 'x', nested: { y: 1 } })).toMatchObject({ new_field: 'x', nested: { y: 1 } });
  });

  it('keeps extra fields of an event, not stripped', () => {
    expect(EventSchema.parse({ ...events['rdr.match'], beta_flag: true })).toMatchObject({ beta_flag: true });
  });

  it('keeps extra fields of a report record, not stripped', () => {
    expect(MidRecordSchema.parse({ ...midRecord, region: 'EU', visa: { ...midRecord.visa, tier: 'early' } })).toMatchObject({
      region: 'EU',
      visa: { tier: 'early' },
    });
  });
});
