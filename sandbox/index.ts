// The sandbox as a library: build it for inject tests, or start it on a port; the pieces a test or the
// demo may want beside it (credentials, world generation, the clock's duration parser).
export {
  buildSandbox,
  startSandbox,
  PREFIXES,
  DEFAULT_SEED,
  DEFAULT_START,
  DEFAULT_TOKEN_TTL_SECONDS,
  DEFAULT_DELIVERY_TIMEOUT_MS,
  type SandboxOptions,
  type RunningSandbox,
  type SandboxBaseUrls,
} from './server.ts';
export { DEFAULT_CREDENTIALS, type SandboxCredentials, type SandboxState } from './state.ts';
export { parseDuration, isoSeconds } from './clock.ts';
export { RETRY_DELAYS_MS, GIVE_UP_AFTER_MS } from './delivery.ts';
export { VETTING_RETRIES, VETTING_INTERVAL_MS } from './vetting.ts';
export { FaultsConfigSchema, type FaultsConfig } from './faults.ts';
export { generateWorld } from './generate.ts';
export type { World, MatchInfo } from './world.ts';
