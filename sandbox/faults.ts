// Fault injection, off by default. Configured per interface (auth, events, orders, reporting) or per route
// (a path prefix, optionally preceded by a method: "POST /orders/v1/order"), plus faults of event
// deliveries (duplicate and out-of-order sends). Every roll comes from one seeded PRNG, so a faulty run
// with the same seed and the same sequence of requests repeats exactly.
import { z } from 'zod';

export const INTERFACES = ['auth', 'events', 'orders', 'reporting'] as const;
export type InterfaceName = (typeof INTERFACES)[number];

const rate = z.number().min(0, 'a rate is between 0 and 1').max(1, 'a rate is between 0 and 1');

export const FaultSpecSchema = z.strictObject({
  /** Share of requests answered with one of errorStatuses instead of being served. */
  errorRate: rate.default(0),
  errorStatuses: z.array(z.number().int().min(400).max(599)).min(1).default([503]),
  /** Share of requests answered 429 with a Retry-After header. */
  tooManyRate: rate.default(0),
  retryAfterSeconds: z.number().int().min(0).default(1),
  /** Real milliseconds added before every request of the target is handled. */
  latencyMs: z.number().int().min(0).max(120_000).default(0),
  /** Share of requests whose connection is destroyed without an answer. */
  dropRate: rate.default(0),
  /** Stop injecting (errors, 429s, drops) after this many; latency is not counted. */
  limit: z.number().int().min(1).optional(),
});
export type FaultSpec = z.infer<typeof FaultSpecSchema>;

export const DeliveryFaultsSchema = z.strictObject({
  /** Share of deliveries sent twice in a row. */
  duplicateRate: rate.default(0),
  /** Share of first sends held back by outOfOrderDelaySeconds of sandbox time, so later events overtake them. */
  outOfOrderRate: rate.default(0),
  outOfOrderDelaySeconds: z.number().int().min(1).default(300),
});
export type DeliveryFaults = z.infer<typeof DeliveryFaultsSchema>;

export const FaultsConfigSchema = z.strictObject({
  seed: z.number().int().optional(),
  interfaces: z.partialRecord(z.enum(INTERFACES), FaultSpecSchema).optional(),
  routes: z.record(z.string().min(1), FaultSpecSchema).optional(),
  deliveries: DeliveryFaultsSchema.optional(),
});
export type FaultsConfig = z.infer<typeof FaultsConfigSchema>;

/** mulberry32: small, fast, and the same numbers on every platform. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type FaultDecision =
  | { kind: 'none'; latencyMs: number }
  | { kind: 'error'; status: number; latencyMs: number }
  | { kind: 'tooMany'; retryAfterSeconds: number; latencyMs: number }
  | { kind: 'drop'; latencyMs: number };

export interface Faults {
  get(): { config: FaultsConfig; injected: Record<string, number> };
  set(config: FaultsConfig): void;
  clear(): void;
  /** What to do with a request of an interface (undefined for admin routes). */
  decide(iface: InterfaceName | undefined, method: string, path: string): FaultDecision;
  deliveryDuplicate(): boolean;
  /** Sandbox ms to hold a first send back, or 0. */
  deliveryHoldBack(): number;
}

export function createFaults(defaultSeed: number): Faults {
  let config: FaultsConfig = {};
  let rnd = mulberry32(defaultSeed);
  let injected: Record<string, number> = {};

  function specFor(iface: InterfaceName | undefined, method: string, path: string): { key: string; spec: FaultSpec } | undefined {
    // The longest matching route wins over the interface's rule.
    let best: { key: string; spec: FaultSpec; len: number } | undefined;
    for (const [key, spec] of Object.entries(config.routes ?? {})) {
      const m = /^([A-Z]+)\s+(\S+)$/.exec(key.trim());
      const wantMethod = m?.[1];
      const prefix = m ? m[2] : key.trim();
      if (wantMethod && wantMethod !== method.toUpperCase()) continue;
      if (!path.startsWith(prefix)) continue;
      if (!best || prefix.length > best.len) best = { key, spec, len: prefix.length };
    }
    if (best) return { key: `route ${best.key}`, spec: best.spec };
    const spec = iface ? config.interfaces?.[iface] : undefined;
    return spec && iface ? { key: iface, spec } : undefined;
  }

  return {
    get: () => ({ config, injected: { ...injected } }),
    set(c) {
      config = c;
      rnd = mulberry32(c.seed ?? defaultSeed);
      injected = {};
    },
    clear() {
      config = {};
      rnd = mulberry32(defaultSeed);
      injected = {};
    },
    decide(iface, method, path) {
      if (!iface) return { kind: 'none', latencyMs: 0 };
      const found = specFor(iface, method, path);
      if (!found) return { kind: 'none', latencyMs: 0 };
      const { key, spec } = found;
      const latencyMs = spec.latencyMs;
      if (spec.limit !== undefined && (injected[key] ?? 0) >= spec.limit) return { kind: 'none', latencyMs };
      const r = rnd();
      let edge = spec.dropRate;
      let d: FaultDecision = { kind: 'none', latencyMs };
      if (r < edge) d = { kind: 'drop', latencyMs };
      else if (r < (edge += spec.tooManyRate)) d = { kind: 'tooMany', retryAfterSeconds: spec.retryAfterSeconds, latencyMs };
      else if (r < (edge += spec.errorRate)) {
        const statuses = spec.errorStatuses;
        d = { kind: 'error', status: statuses[Math.floor(rnd() * statuses.length)], latencyMs };
      }
      if (d.kind !== 'none') injected[key] = (injected[key] ?? 0) + 1;
      return d;
    },
    deliveryDuplicate() {
      const p = config.deliveries?.duplicateRate ?? 0;
      return p > 0 && rnd() < p;
    },
    deliveryHoldBack() {
      const d = config.deliveries;
      if (!d || d.outOfOrderRate <= 0) return 0;
      return rnd() < d.outOfOrderRate ? d.outOfOrderDelaySeconds * 1000 : 0;
    },
  };
}
