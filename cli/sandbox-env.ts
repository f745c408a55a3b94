// The settings that point cbp at a sandbox: its four base URLs (order data through its stage base) and its
// test credentials. One map for the demo, `cbp sandbox`'s printed exports and the tests.
import path from 'node:path';
import type { RunningSandbox } from '../sandbox/server.ts';

export function sandboxServiceEnv(sb: Pick<RunningSandbox, 'baseUrls' | 'credentials'>): Record<string, string> {
  return {
    CBP_AUTH_BASE_URL: sb.baseUrls.auth,
    CBP_EVENTS_BASE_URL: sb.baseUrls.events,
    CBP_DATA_BASE_URL: sb.baseUrls.ordersStage,
    CBP_REPORTING_BASE_URL: sb.baseUrls.reporting,
    CBP_API_SECRET: sb.credentials.apiSecret,
    CBP_DATA_USERNAME: sb.credentials.dataUsername,
    CBP_DATA_PASSWORD: sb.credentials.dataPassword,
    CBP_REPORTING_KEY: sb.credentials.reportingKey,
    CBP_COMPANY_TOKEN: sb.credentials.companyToken,
  };
}

/** The same settings under a data directory of their own: store, snapshot and journal inside it. */
export function sandboxEnv(sb: Pick<RunningSandbox, 'baseUrls' | 'credentials'>, dataDir: string): Record<string, string> {
  return {
    ...sandboxServiceEnv(sb),
    CBP_DATA_DIR: dataDir,
    CBP_DB_PATH: path.join(dataDir, 'cbp.duckdb'),
    CBP_SNAPSHOT_PATH: path.join(dataDir, 'published', 'cbp.duckdb'),
    CBP_JOURNAL_DIR: path.join(dataDir, 'journal'),
  };
}
