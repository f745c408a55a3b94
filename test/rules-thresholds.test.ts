// The thresholds file: defaults from the reference table, validation naming the field, overrides.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultThresholds, loadRules, parseThresholds } from '../rules/thresholds.ts';
import { ConfigError, ValidationError } from '../lib/errors.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('default thresholds', () => {
  const d = defaultThresholds();
  const byId = new Map(d.rules.map((r) => [r.id, r]));

  it('holds the reference table\'s programs, levels and effective dates', () => {
    expect(byId.get('visa.vamp.excessive.2025')).toMatchObject({ ratio_threshold: 0.022, comparison: '>=', effective_to: '2026-03-31' });
    expect(byId.get('visa.vamp.excessive.2026')).toMatchObject({ ratio_threshold: 0.015, effective_from: '2026-04-01' });
    expect(byId.get('visa.vamp.excessive.cemea')!.conditions).toEqual([
      { field: 'numerator_count', comparison: '>=', value: 150 },
      { field: 'numerator_amount', comparison: '>=', value: 75_000 },
    ]);
    expect(byId.get('visa.vdmp.excessive')).toMatchObject({ effective_to: '2025-03-31', ratio_threshold: 0.018 });
    expect(byId.get('visa.vfmp.standard')).toMatchObject({ metric: 'amount', effective_to: '2025-03-31' });
    expect(byId.get('mastercard.ecp.ecm')).toMatchObject({ ratio_threshold: 0.015, months_to_leave: 3 });
    expect(byId.get('mastercard.ecp.hecm')!.conditions[0]).toEqual({ field: 'numerator_count', comparison: '>=', value: 300 });
    expect(byId.get('mastercard.ecp.early_warning')).toMatchObject({ comparison: '>', enabled: false, early_warning: true });
    expect(byId.get('mastercard.efm.excessive')).toMatchObject({ ratio_threshold: 0.005 });
    expect(byId.get('discover.excessive.dispute')).toMatchObject({ comparison: '>', ratio_threshold: 0.01 });
    expect(byId.get('american_express.excessive.chargebacks')).toMatchObject({ comparison: '>', months_to_enter: 3 });
  });

  it('loads the defaults when no file is set', () => {
    expect(loadRules().rules.length).toBe(d.rules.length);
  });
});

describe('a thresholds file', () => {
  it('names the field of every error', () => {
    const bad = { rules: [{ id: 'x', network: 'visa', program: 'vamp', level: 'l', rank: 1, comparison: '=>', ratio_threshold: '2%' }] };
    try {
      parseThresholds(JSON.stringify(bad), 'thresholds.json');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationError);
      const issues = (e as ValidationError).issues.join('\n');
      expect(issues).toContain('rules.0.comparison');
      expect(issues).toContain('rules.0.ratio_threshold');
      expect((e as Error).message).toContain('thresholds.json');
    }
  });

  it('rejects unknown keys and an unknown rule id to disable', () => {
    expect(() => parseThresholds('{"rulez": []}', 't.json')).toThrow(/rulez/);
    expect(() => parseThresholds('{"disable": ["nope"]}', 't.json')).toThrow(ConfigError);
  });

  it('replaces a default rule by id and reads YAML from CBP_THRESHOLDS_FILE', () => {
    const file = path.join(dir, 'thresholds.yaml');
    fs.writeFileSync(
      file,
      [
        'default_region: EU',
        'disable: [visa.vdmp.early_warning]',
        'rules:',
        '  - id: mastercard.ecp.ecm',
        '    network: mastercard',
        '    program: ecp',
        '    level: ecm',
        '    rank: 2',
        '    comparison: ">="',
        '    ratio_threshold: 0.012',
        '    conditions: [{ field: numerator_count, value: 50 }]',
        'mids:',
        '  m1: { region: CEMEA }',
      ].join('\n'),
    );
    const set = loadRules(file);
    expect(set.defaultRegion).toBe('EU');
    expect(set.mids.m1.region).toBe('CEMEA');
    const ecm = set.rules.filter((r) => r.id === 'mastercard.ecp.ecm');
    expect(ecm).toHaveLength(1);
    expect(ecm[0]).toMatchObject({ ratio_threshold: 0.012, months_to_leave: 1 });
    expect(set.rules.find((r) => r.id === 'visa.vdmp.early_warning')!.enabled).toBe(false);
    expect(() => loadRules(path.join(dir, 'missing.yaml'))).toThrow(/does not exist/);
  });
});
