// The card payment behind a case or a merchant order, as the generator draws it: the card's first six and
// last four digits, the order's amount, the ARN and the short codes printed on the records.
import type { Network } from '../contract/common.ts';
import type { Rng } from './rng.ts';

export interface Card {
  first6: string;
  last4: string;
}

/** Letters and digits of auth codes, case numbers and tracking numbers. */
export const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export const toCents = (v: number): number => Math.round(v * 100);

/** A card of the network, with a plausible prefix (Visa 4, Mastercard 51-55, Amex 34/37, Discover 6011). */
export function drawCard(rng: Rng, net: Network): Card {
  let first6: string;
  switch (net) {
    case 'visa':
      first6 = `4${rng.digits(5)}`;
      break;
    case 'mastercard':
      first6 = `5${rng.int(1, 5)}${rng.digits(4)}`;
      break;
    case 'american_express':
      first6 = `3${rng.pick(['4', '7'])}${rng.digits(4)}`;
      break;
    default:
      first6 = `6011${rng.digits(2)}`;
  }
  return { first6, last4: rng.digits(4) };
}

/** An order amount in cents: log-normal around the average ticket (mean-corrected), at least 1.00. */
export function ticketCents(rng: Rng, avg: number): number {
  const sigma = 0.5;
  const v = avg * Math.exp(rng.normal(-(sigma * sigma) / 2, sigma));
  return Math.max(100, Math.min(toCents(avg * 20), toCents(v)));
}

/** A 23-digit acquirer reference number. */
export const drawArn = (rng: Rng): string => `7${rng.digits(22)}`;
