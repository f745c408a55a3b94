// The programs as published in the second reading (issue #28, ../shared/reference/card-network-programs.md): VAMP's
// exit after one month below, ECM's and EFM's after three, the two CEMEA readings, Australia's EFM, and what is named
// as not modelled. Hand-computed rows through the oracle's explanation (test/oracle/explain.ts).
import { describe, expect, it } from 'vitest';
import type { RatioRow } from './oracle/evaluate.ts';
import { explainRows } from './oracle/explain.ts';
import { loadRules, parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import { ratioRow, type RatioRowFixture } from './ratios-fixtures.ts';

const rules = loadRules();
const row = (p: RatioRowFixture): RatioRow => ratioRow({ tc40_observed_from: '2024-01-01', ...p });
const withFile = (file: Record<string, unknown>) => parseThresholds(JSON.stringify(file), 't.json');
const levels = (rows: RatioRow[], set: RuleSet = rules) => explainRows(rows, set).map((x) => x.level);

describe('exit rules', () => {
  it('VAMP Excessive is left after one month below', () => {
    const v = (month: string, num: number) => row({ mid: 'v1', network: 'visa', program: 'vamp', month, num, den: 100_000 });
    expect(levels([v('2026-05', 2_000), v('2026-06', 100), v('2026-07', 2_000)])).toEqual(['excessive', null, 'excessive']);
    expect(rules.rules.filter((r) => r.program === 'vamp' && r.enabled).every((r) => r.months_to_leave === 1)).toBe(true);
  });

  it('ECM and EFM are left after three consecutive months below', () => {
    for (const id of ['mastercard.ecp.ecm', 'mastercard.ecp.hecm', 'mastercard.efm.excessive', 'mastercard.efm.excessive.au']) {
      expect(rules.rules.find((r) => r.id === id)?.months_to_leave).toBe(3);
    }
  });
});

describe('VAMP CEMEA: two readings, the file chooses', () => {
  // 120 reports of USD 80,000 over 5,000 transactions (2.4 %) in CEMEA
  const cemea = { mids: { c1: { region: 'CEMEA' } } };
  const c = () => row({ mid: 'c1', network: 'visa', program: 'vamp', month: '2026-06', num: 120, den: 5_000, numerator_amount: 80_000 });
  it('by default ≥ 150 reports: 120 is not enough', () => {
    const [x] = explainRows([c()], withFile(cemea));
    expect(x).toMatchObject({ level: null, next_level: 'excessive', headroom_count: 30 });
  });
  it('the MENA reading (> 100 and > USD 75,000) reaches Excessive with the same figures', () => {
    const set = withFile({ ...cemea, enable: ['visa.vamp.excessive.cemea.mena'], disable: ['visa.vamp.excessive.cemea'] });
    expect(explainRows([c()], set)[0]).toMatchObject({ level: 'excessive', region: 'CEMEA' });
  });
});

describe('Mastercard EFM in Australia: a region rule of its own', () => {
  // fraud chargebacks 30 of 10,000 previous-month transactions (0.3 %), USD 20,000 of fraud
  const e = (mid: string) => row({ mid, network: 'mastercard', program: 'efm', month: '2026-06', num: 30, den: 10_000, numerator_amount: 20_000, denominator_month: '2026-05' });
  const set = withFile({ mids: { au1: { region: 'AU' } } });
  it('an Australian MID reaches EFM at 0.20 % and USD 15,000; a US one with the same figures does not', () => {
    const [au, us] = explainRows([e('au1'), e('us1')], set);
    expect(au).toMatchObject({ level: 'efm', certainty: 'unconfirmed', region: 'AU' });
    expect(us).toMatchObject({ level: null, next_level: 'efm' });
  });
  it('VAMP rules for Asia Pacific still apply to an Australian MID', () => {
    const [v] = explainRows([row({ mid: 'au1', network: 'visa', program: 'vamp', month: '2026-06', num: 2_000, den: 100_000 })], set);
    expect(v).toMatchObject({ level: 'excessive', region: 'AU' });
  });
});

describe('not modelled, and why', () => {
  it('VAMP enumeration is named with its reason: it needs authorization data', () => {
    expect(rules.notModelled?.find((n) => n.program === 'vamp_enumeration')?.reason).toMatch(/authorization data/);
  });
  it('the EFM 3-D Secure condition stays unconfirmed', () => {
    expect(rules.rules.filter((r) => r.program === 'efm').every((r) => r.certainty === 'unconfirmed' && /3-D Secure/.test(r.certainty_note ?? ''))).toBe(true);
  });
});
