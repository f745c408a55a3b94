// Issuer reason codes per network, with descriptions, whether the code is fraud-coded, and a weight for how
// often the generator draws it. Fraud flags follow the monitoring programs of docs/reference/card-network-programs.md:
// Mastercard's EFM counts only 4837 and 4863; Visa's fraud codes are group 10; Amex F*/FR*; Discover UA*.
import type { Network } from '../contract/common.ts';

export interface ReasonCode {
  code: string;
  description: string;
  fraud: boolean;
  weight: number;
}

const rc = (code: string, description: string, fraud: boolean, weight: number): ReasonCode => ({ code, description, fraud, weight });

export const REASON_CODES: Record<Network, readonly ReasonCode[]> = {
  visa: [
    rc('10.1', 'EMV Liability Shift Counterfeit Fraud', true, 1),
    rc('10.2', 'EMV Liability Shift Non-Counterfeit Fraud', true, 1),
    rc('10.3', 'Other Fraud - Card-Present Environment', true, 2),
    rc('10.4', 'Other Fraud - Card-Absent Environment', true, 40),
    rc('10.5', 'Visa Fraud Monitoring Program', true, 1),
    rc('11.1', 'Card Recovery Bulletin', false, 1),
    rc('11.2', 'Declined Authorization', false, 1),
    rc('11.3', 'No Authorization', false, 3),
    rc('12.1', 'Late Presentment', false, 1),
    rc('12.2', 'Incorrect Transaction Code', false, 1),
    rc('12.3', 'Incorrect Currency', false, 1),
    rc('12.4', 'Incorrect Account Number', false, 1),
    rc('12.5', 'Incorrect Amount', false, 2),
    rc('12.6.1', 'Duplicate Processing', false, 3),
    rc('12.6.2', 'Paid by Other Means', false, 2),
    rc('12.7', 'Invalid Data', false, 1),
    rc('13.1', 'Merchandise/Services Not Received', false, 20),
    rc('13.2', 'Cancelled Recurring Transaction', false, 8),
    rc('13.3', 'Not as Described or Defective Merchandise/Services', false, 10),
    rc('13.4', 'Counterfeit Merchandise', false, 1),
    rc('13.5', 'Misrepresentation', false, 2),
    rc('13.6', 'Credit Not Processed', false, 8),
    rc('13.7', 'Cancelled Merchandise/Services', false, 5),
  ],
  mastercard: [
    rc('4837', 'No Cardholder Authorization', true, 35),
    rc('4863', 'Cardholder Does Not Recognize - Potential Fraud', true, 15),
    rc('4808', 'Authorization-Related Chargeback', false, 4),
    rc('4831', 'Transaction Amount Differs', false, 2),
    rc('4834', 'Point-of-Interaction Error', false, 3),
    rc('4841', 'Cancelled Recurring or Digital Goods Transactions', false, 6),
    rc('4842', 'Late Presentment', false, 1),
    rc('4849', 'Questionable Merchant Activity', false, 1),
    rc('4853', 'Cardholder Dispute', false, 20),
    rc('4855', 'Goods or Services Not Provided', false, 15),
    rc('4859', 'Addendum, No-show, or ATM Dispute', false, 1),
    rc('4860', 'Credit Not Processed', false, 6),
    rc('4870', 'Chip Liability Shift', false, 1),
    rc('4871', 'Chip/PIN Liability Shift', false, 1),
  ],
  american_express: [
    rc('F10', 'Missing Imprint', true, 2),
    rc('F14', 'Missing Signature', true, 1),
    rc('F24', 'No Card Member Authorization', true, 8),
    rc('F29', 'Card Not Present', true, 30),
    rc('FR2', 'Fraud Full Recourse Program', true, 2),
    rc('FR4', 'Immediate Chargeback Program', true, 1),
    rc('FR6', 'Partial Immediate Chargeback Program', true, 1),
    rc('A01', 'Charge Amount Exceeds Authorization Amount', false, 1),
    rc('A02', 'No Valid Authorization', false, 2),
    rc('A08', 'Authorization Approval Expired', false, 1),
    rc('C02', 'Credit Not Processed', false, 6),
    rc('C04', 'Goods/Services Returned or Refused', false, 4),
    rc('C05', 'Goods/Services Cancelled', false, 4),
    rc('C08', 'Goods/Services Not Received or Only Partially Received', false, 15),
    rc('C14', 'Paid by Other Means', false, 2),
    rc('C18', '"No Show" or CARDeposit Cancelled', false, 1),
    rc('C28', 'Cancelled Recurring Billing', false, 5),
    rc('C31', 'Goods/Services Not as Described', false, 6),
    rc('C32', 'Goods/Services Damaged or Defective', false, 3),
    rc('P01', 'Unassigned Card Number', false, 1),
    rc('P03', 'Credit Processed as Charge', false, 1),
    rc('P05', 'Incorrect Charge Amount', false, 2),
    rc('P07', 'Late Submission', false, 1),
    rc('P08', 'Duplicate Charge', false, 2),
    rc('P22', 'Non-Matching Card Number', false, 1),
    rc('P23', 'Currency Discrepancy', false, 1),
  ],
  discover: [
    rc('UA01', 'Fraud - Card Present Transaction', true, 2),
    rc('UA02', 'Fraud - Card Not Present Transaction', true, 30),
    rc('UA05', 'Fraud - Chip Counterfeit Transaction', true, 1),
    rc('UA06', 'Fraud - Chip and PIN Transaction', true, 1),
    rc('AA', 'Does Not Recognize', false, 8),
    rc('AP', 'Cancelled Recurring Transaction', false, 5),
    rc('AW', 'Altered Amount', false, 2),
    rc('CD', 'Credit/Debit Posted Incorrectly', false, 2),
    rc('DP', 'Duplicate Processing', false, 3),
    rc('IC', 'Illegible Sales Data', false, 1),
    rc('IN', 'Invalid Card Number', false, 1),
    rc('LP', 'Late Presentation', false, 1),
    rc('NA', 'No Authorization', false, 3),
    rc('PM', 'Paid by Other Means', false, 2),
    rc('RG', 'Non-Receipt of Goods, Services or Cash', false, 15),
    rc('RM', 'Quality Discrepancy', false, 8),
    rc('RN2', 'Credit Not Received', false, 6),
  ],
};

const split = (net: Network) => {
  const all = REASON_CODES[net];
  const fraud = all.filter((r) => r.fraud);
  const other = all.filter((r) => !r.fraud);
  return { fraud, fraudW: fraud.map((r) => r.weight), other, otherW: other.map((r) => r.weight) };
};

/** The network's codes split by fraud flag, with weights, for drawing. */
export const REASON_POOLS: Record<Network, ReturnType<typeof split>> = {
  visa: split('visa'),
  mastercard: split('mastercard'),
  american_express: split('american_express'),
  discover: split('discover'),
};

/** Looks a code up (e.g. to describe a code found in a pinned scenario). */
export function reasonCode(network: Network, code: string): ReasonCode | undefined {
  return REASON_CODES[network].find((r) => r.code === code);
}

/** Standard reasons for a case closed as not fought (chargeback.dnf's dnf_reason). */
export const DNF_REASONS = [
  'Amount below representment threshold',
  'Insufficient compelling evidence',
  'Order refunded before the dispute',
  'Merchant accepted liability',
  'Duplicate of an existing case',
  'Representment window expired',
] as const;
