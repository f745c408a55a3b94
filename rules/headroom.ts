// Headroom as words: how many more numerator events reach the next level, how many fewer would have left the level met.
// The figures are the judge's (sql/views/44_ratio_explain.sql); docs/ratios.md "Headroom" gives the formulas.
import type { HeadroomBasis, RatioRow } from '../contract/ratios.ts';

export interface Headroom {
  headroom_count: number | null;
  over_by_count: number | null;
  headroom_basis: HeadroomBasis | null;
}

/** What one more numerator event is, per program (singular, plural). */
const EVENTS: Record<string, [string, string]> = {
  vamp: ['Visa dispute or TC40 fraud report', 'Visa disputes or TC40 fraud reports'],
  vdmp: ['Visa dispute', 'Visa disputes'],
  vfmp: ['Visa fraud report', 'Visa fraud reports'],
  ecp: ['Mastercard chargeback', 'Mastercard chargebacks'],
  efm: ['Mastercard fraud chargeback', 'Mastercard fraud chargebacks'],
  discover_excessive: ['Discover chargeback', 'Discover chargebacks'],
  amex_excessive: ['American Express chargeback', 'American Express chargebacks'],
  monthly: ['chargeback', 'chargebacks'],
};

const PROGRAM_NAMES: Record<string, string> = {
  vamp: 'VAMP', vdmp: 'VDMP', vfmp: 'VFMP', ecp: 'Mastercard', efm: 'Mastercard', discover_excessive: 'Discover',
  amex_excessive: 'American Express', monthly: 'monthly',
};

/** A level as people say it: "VAMP Excessive", "ECM", "Discover Excessive". */
export function levelLabel(program: string, level: string): string {
  if (/^(ecm|hecm|efm)$/.test(level)) return level.toUpperCase();
  const name = level.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join(' ');
  return `${PROGRAM_NAMES[program] ?? program} ${name}`;
}

const events = (program: string, n: number, how: 'more' | 'fewer') => `${n.toLocaleString('en-US')} ${how} ${(EVENTS[program] ?? EVENTS.monthly)[n === 1 ? 0 : 1]}`;

/** The row's headroom and over-by as words; null when it has neither. */
export function headroomWords(r: Pick<RatioRow, 'program' | 'month' | 'is_projection' | 'is_partial'> & Headroom & { next_level: string | null; level: string | null }): string | null {
  const when = r.is_projection ? `than projected for ${r.month}` : r.is_partial ? 'this month' : `in ${r.month}`;
  const basis = r.headroom_basis === 'projected_month' && !r.is_projection ? ' (on the month\'s projected transactions)' : '';
  const out: string[] = [];
  if (r.over_by_count != null && r.level) {
    out.push(`${events(r.program, r.over_by_count, 'fewer')} ${when} would have left ${levelLabel(r.program, r.level)}${basis}`);
  }
  if (r.headroom_count != null && r.next_level) {
    const verb = r.is_partial || r.is_projection ? 'reach' : 'would have reached';
    out.push(r.headroom_count === 0
      ? `every condition of ${levelLabel(r.program, r.next_level)} is met ${when}${basis}`
      : `${events(r.program, r.headroom_count, 'more')} ${when} ${verb} ${levelLabel(r.program, r.next_level)}${basis}`);
  }
  return out.length ? out.join('; ') : null;
}
