// Visa's regions, as the monitoring rules name them (rules/defaults.json `regions`): the region a MID is
// evaluated under decides which VAMP thresholds apply. Here, at the bottom, so that the configuration
// (lib/config.ts CBP_DEFAULT_REGION) and the thresholds file (rules/thresholds.ts) check against one list.
export const REGIONS = ['US', 'CA', 'EU', 'AP', 'LAC', 'CEMEA', 'AU'] as const;
export type Region = (typeof REGIONS)[number];

/**
 * A market inside a Visa region, where a network has a rule of its own (Mastercard's Australian EFM): a rule for
 * the region applies there too, unless it lists the market in except_regions.
 */
export const REGION_WITHIN: Partial<Record<Region, Region>> = { AU: 'AP' };

/** Whether a rule's regions (null: every one) and except_regions take in a MID's region. */
export function regionApplies(regions: readonly string[] | null, except: readonly string[], region: string): boolean {
  if (except.includes(region)) return false;
  if (regions === null) return true;
  const within = REGION_WITHIN[region as Region];
  return regions.includes(region) || (within !== undefined && regions.includes(within));
}

/** The region a MID is evaluated under when neither the thresholds file nor CBP_DEFAULT_REGION names one. */
export const BUILT_IN_DEFAULT_REGION: Region = 'US';
