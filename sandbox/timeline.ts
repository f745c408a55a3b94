// Puts the world's future on the sandbox clock: every entity arrival and chargeback status change at or
// after the clock's start becomes a task emitting its event (and the .match event when a pushed order
// fits). What happened before the start is history: known to lookups and reports, never delivered.
import { emit } from './delivery.ts';
import { matchArrivedEntity } from './matching.ts';
import {
  chargebackDnfFields,
  chargebackNewFields,
  chargebackResultFields,
  orderValidationNewFields,
  preventionNewFields,
  rdrNewFields,
} from './payloads.ts';
import type { SandboxState } from './state.ts';

const RESULTS = { Won: 'won', Lost: 'lost', 'Pre-Arbitration': 'pre-arbitration' } as const;

export function scheduleWorld(state: SandboxState): number {
  const start = state.clock.startedAt;
  const { world, clock } = state;
  let n = 0;
  const at = (iso: string, label: string, run: () => void) => {
    const t = Date.parse(iso);
    if (!(t >= start)) return;
    clock.schedule(t, label, run);
    n++;
  };
  for (const c of world.chargebacks) {
    at(c.received_at, 'chargeback.new', () => {
      emit(state, 'chargeback.new', c.chargeback_guid, chargebackNewFields(c));
      matchArrivedEntity(state, 'chargeback', c);
    });
    for (const s of c.statuses.slice(1)) {
      if (s.status === 'Did Not Fight') {
        at(s.at, 'chargeback.dnf', () => void emit(state, 'chargeback.dnf', c.chargeback_guid, chargebackDnfFields(c, s.at)));
      } else if (s.status in RESULTS) {
        const result = RESULTS[s.status as keyof typeof RESULTS];
        at(s.at, 'chargeback.result', () => void emit(state, 'chargeback.result', c.chargeback_guid, chargebackResultFields(c, result)));
      }
    }
  }
  for (const a of world.alerts) {
    at(a.prevention_at, 'prevention.new', () => {
      emit(state, 'prevention.new', a.prevention_guid, preventionNewFields(a));
      matchArrivedEntity(state, 'prevention', a);
    });
  }
  for (const r of world.rdrs) {
    at(r.rdr_at, 'rdr.new', () => {
      emit(state, 'rdr.new', r.rdr_guid, rdrNewFields(r));
      matchArrivedEntity(state, 'rdr', r);
    });
  }
  for (const o of world.orderValidations) {
    at(o.received_at, 'order_validation.new', () => {
      emit(state, 'order_validation.new', o.order_validation_guid, orderValidationNewFields(o));
      matchArrivedEntity(state, 'order_validation', o);
    });
  }
  return n;
}
