// Visa's regions, as the monitoring rules name them (rules/defaults.json `regions`): the region a MID is
// evaluated under decides which VAMP thresholds apply. Here, at the bottom, so that the configuration
// (lib/config.ts CBP_DEFAULT_REGION) and the thresholds file (rules/thresholds.ts) check against one list.
export const REGIONS = ['US', 'CA', 'EU', 'AP', 'LAC', 'CEMEA'] as const;
export type Region = (typeof REGIONS)[number];

/** The region a MID is evaluated under when neither the thresholds file nor CBP_DEFAULT_REGION names one. */
export const BUILT_IN_DEFAULT_REGION: Region = 'US';
