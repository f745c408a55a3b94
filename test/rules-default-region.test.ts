// loadRules' default region: the thresholds file's default_region when it sets one, else CBP_DEFAULT_REGION
// (passed as opts.defaultRegion), else US; both set and different is refused; unknown regions are refused.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRules } from '../rules/thresholds.ts';
import { ConfigError } from '../lib/errors.ts';
import { tempDir } from './helpers/tmp.ts';

const dir = tempDir();
function file(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}
function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('loadRules default region', () => {
  it('is US, built in, with no file and no setting', () => {
    expect(loadRules()).toMatchObject({ defaultRegion: 'US', defaultRegionFrom: 'built-in' });
  });

  it('is CBP_DEFAULT_REGION when the thresholds file sets none (or there is no file)', () => {
    expect(loadRules(undefined, { defaultRegion: 'EU' })).toMatchObject({ defaultRegion: 'EU', defaultRegionFrom: 'CBP_DEFAULT_REGION' });
    const f = file('no-default.yaml', 'mids:\n  m1: { region: CEMEA }\n');
    const set = loadRules(f, { defaultRegion: 'AP' });
    expect(set).toMatchObject({ defaultRegion: 'AP', defaultRegionFrom: 'CBP_DEFAULT_REGION' });
    expect(set.mids.m1.region).toBe('CEMEA');
  });

  it("is the file's own default_region when it sets one, agreeing with the setting or with no setting", () => {
    const f = file('eu.json', JSON.stringify({ default_region: 'EU' }));
    expect(loadRules(f)).toMatchObject({ defaultRegion: 'EU', defaultRegionFrom: `default_region in ${f}` });
    expect(loadRules(f, { defaultRegion: 'EU' }).defaultRegion).toBe('EU');
  });

  it('refuses the file and the setting naming different regions, naming both', () => {
    const f = file('us.yaml', 'default_region: US\n');
    expect(problems(() => loadRules(f, { defaultRegion: 'CA' }))).toEqual([
      `CBP_DEFAULT_REGION is CA but the thresholds file ${f} sets default_region: US; keep one of them (or make them agree)`,
    ]);
  });

  it('refuses a region the rules do not know, in default_region, for a MID or for a group', () => {
    const f = file('bad.yaml', 'default_region: Europe\nmids:\n  m9: { region: emea }\ngroups:\n  g1: { mids: [m9, m8], region: Mars }\n');
    expect(problems(() => loadRules(f))).toEqual([
      `default_region in ${f}: unknown region "Europe"; expected one of US, CA, EU, AP, LAC, CEMEA, AU`,
      `${f}: mids.m9.region: unknown region "emea"; expected one of US, CA, EU, AP, LAC, CEMEA, AU`,
      `${f}: groups.g1.region: unknown region "Mars"; expected one of US, CA, EU, AP, LAC, CEMEA, AU`,
    ]);
  });
});
