// Which MIDs were evaluated under the default region (no region of their own in the thresholds file), and
// the one sentence `cbp ratios` and the nightly's summary say about them.
import { groupOf, regionInfo } from './rule-set.ts';
import type { RuleSet } from './thresholds.ts';

/** The MIDs among mids judged under the default region: no mids.<mid>.region, nor a region of their VAMP group. */
export function midsWithoutRegion(set: RuleSet, mids: Iterable<string>): string[] {
  const out: string[] = [];
  for (const mid of mids) if (regionInfo(set, groupOf(set, mid, 'vamp') ?? mid).source === 'default') out.push(mid);
  return out;
}

/**
 * "3 MIDs have no region of their own and were evaluated as US (CBP_DEFAULT_REGION; or set mids.<mid>.region in
 * the thresholds file)". `from`: loadRules' defaultRegionFrom ("built-in", "CBP_DEFAULT_REGION", "default_region in <file>").
 */
export function noRegionNote(count: number, region: string, from: string | undefined): string {
  const source = from === undefined || from === 'built-in' ? 'the built-in default; set CBP_DEFAULT_REGION, or' : `${from}; or`;
  const one = count === 1;
  return (
    `${count} MID${one ? ' has' : 's have'} no region of ${one ? 'its' : 'their'} own and ${one ? 'was' : 'were'} evaluated as ${region} ` +
    `(${source} set mids.<mid>.region in the thresholds file)`
  );
}
