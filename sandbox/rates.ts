// How often each kind of case happens: per-profile rates per network, the default network mix, and the
// noise put on a rate when a month is drawn. A table of data; the draws that use it are in figures.ts.
import type { Network } from '../contract/common.ts';
import type { Month } from './calendar.ts';
import type { Rng } from './rng.ts';
import type { Profile, ScenarioMid } from './scenario.ts';

/** Per-profile rates per network. Chargeback rates are over the month's transactions for Visa and Amex, and
 *  over the previous month's for Mastercard and Discover, as their programs compute them. */
export interface Rates {
  cb: number;
  fraudShare: number;
  tc40: number;
  ethoca: number;
  verifi: number;
  rdr: number;
  ov: number;
}
const r = (cb: number, fraudShare: number, tc40 = 0, ethoca = 0, verifi = 0, rdr = 0, ov = 0): Rates => ({ cb, fraudShare, tc40, ethoca, verifi, rdr, ov });
// Noise on a rate stays within ±12%, so 'hovering' never reaches a threshold and 'breaching' never drops under.
// hovering: MC 1.25% (max 1.4% < 1.5%), Visa disputes + TC40 1.25% (max 1.4% < 1.5%), Amex/Discover 0.85%.
// breaching: MC 2.2% (min 1.94%), Visa 1.1% + 1.7% = 2.8% (min 2.46% > 2.2%), Amex/Discover 1.4% (min 1.23%).
export const RATES: Record<Profile, Record<Network, Rates>> = {
  healthy: {
    visa: r(0.0035, 0.35, 0.0025, 0.0012, 0.001, 0.0008, 0.001),
    mastercard: r(0.0035, 0.35, 0, 0.0012, 0.0006, 0, 0.0008),
    american_express: r(0.003, 0.3),
    discover: r(0.003, 0.3),
  },
  hovering: {
    visa: r(0.007, 0.45, 0.0055, 0.0025, 0.002, 0.0015, 0.0015),
    mastercard: r(0.0125, 0.45, 0, 0.0025, 0.0012, 0, 0.0012),
    american_express: r(0.0085, 0.4),
    discover: r(0.0085, 0.4),
  },
  breaching: {
    visa: r(0.011, 0.5, 0.017, 0.004, 0.003, 0.002, 0.002),
    mastercard: r(0.022, 0.5, 0, 0.004, 0.002, 0, 0.0015),
    american_express: r(0.014, 0.5),
    discover: r(0.014, 0.5),
  },
};

/** Share of a MID's transactions per network when the scenario gives no mix. */
export const DEFAULT_MIX: Record<Network, number> = { visa: 0.55, mastercard: 0.3, american_express: 0.1, discover: 0.05 };

/** A 'breaching' MID is 'hovering' until this many months before the start's month, then over the line. */
const BREACH_FROM_INDEX = -3;

/** The profile a MID's network is drawn with in a month. */
export function profileOf(m: ScenarioMid, net: Network, month: Month): Profile {
  const p = m.network_profiles?.[net] ?? m.profile;
  if (p === 'breaching' && month.index < BREACH_FROM_INDEX) return 'hovering';
  return p;
}

/** Rate noise: x (1 + N(0, 6%)) clamped to ±12%. */
export function jitter(rng: Rng): number {
  return Math.min(1.12, Math.max(0.88, 1 + rng.normal(0, 0.06)));
}
