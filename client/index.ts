// Builds the four interface clients from cbp's settings. Each client is built on first use and asks only
// for its own settings, so a reporting-only run never needs the API secret.
import type { Config } from '../lib/config.ts';
import { requireSettings, secretValues } from '../lib/config.ts';
import { registerSecrets } from '../lib/log.ts';
import { createEventsClient, type EventsClient } from './events.ts';
import type { ClientOptions } from './http.ts';
import { createOrderDataClient, type OrderDataClient } from './order-data.ts';
import { createReportingClient, type ReportingClient } from './reporting.ts';
import { createTokenClient, type TokenClient } from './token.ts';

export * from './errors.ts';
export { createEventsClient, type EventsClient, type EventsClientConfig } from './events.ts';
export { parseBaseUrl, DEFAULT_TIMEOUT_MS, type ClientOptions } from './http.ts';
export { createOrderDataClient, type OrderDataClient, type OrderDataClientConfig } from './order-data.ts';
export { readReportRecords, ReportFormatError, type RawRecord } from './report-records.ts';
export {
  createReportingClient,
  DEFAULT_REPORT_TIMEOUT_MS,
  ReportWriteError,
  type ReportDownload,
  type ReportingClient,
  type ReportingClientConfig,
  type ReportRequestArgs,
} from './reporting.ts';
export { DEFAULT_RETRY, backoffDelay, parseRetryAfter, retryPolicy, type RetryPolicy } from './retry.ts';
export { ASSUMED_LIFETIME_MS, REFRESH_MARGIN_MS, createTokenClient, jwtExpiry, type TokenClient, type TokenClientConfig } from './token.ts';

export interface ServiceClients {
  readonly token: TokenClient;
  readonly events: EventsClient;
  readonly data: OrderDataClient;
  readonly reporting: ReportingClient;
  /** Closes every client built so far. */
  close(): Promise<void>;
}

export interface ServiceClientsOptions extends Omit<ClientOptions, 'timeoutMs'> {
  now?: () => number;
}

export function createServiceClients(cfg: Config, opts: ServiceClientsOptions = {}): ServiceClients {
  // Every secret setting is scrubbed from the start, not only once its client is built: a service may echo
  // another interface's credential.
  registerSecrets(secretValues(cfg));
  const common: ClientOptions = {
    ...opts,
    timeoutMs: cfg.httpTimeoutMs,
    retry: { retries: cfg.httpRetries, ...opts.retry },
  };
  const built: Array<{ close(): Promise<void> }> = [];
  const once = <T extends { close(): Promise<void> }>(make: () => T) => {
    let v: T | undefined;
    return () => {
      if (!v) {
        v = make();
        built.push(v);
      }
      return v;
    };
  };

  const token = once(() => {
    requireSettings(cfg, ['authBaseUrl', 'apiSecret'], 'the token interface (events)');
    return createTokenClient({ authBaseUrl: cfg.authBaseUrl, apiSecret: cfg.apiSecret }, { ...common, now: opts.now });
  });
  const events = once(() => {
    requireSettings(cfg, ['eventsBaseUrl', 'authBaseUrl', 'apiSecret'], 'the events interface');
    return createEventsClient({ eventsBaseUrl: cfg.eventsBaseUrl }, token(), common);
  });
  const data = once(() => {
    requireSettings(cfg, ['dataBaseUrl', 'dataUsername', 'dataPassword'], 'the order data interface');
    return createOrderDataClient({ dataBaseUrl: cfg.dataBaseUrl, dataUsername: cfg.dataUsername, dataPassword: cfg.dataPassword }, common);
  });
  const reporting = once(() => {
    requireSettings(cfg, ['reportingBaseUrl', 'reportingKey', 'companyToken'], 'the reporting interface');
    return createReportingClient(
      { reportingBaseUrl: cfg.reportingBaseUrl, reportingKey: cfg.reportingKey, companyToken: cfg.companyToken },
      { ...common, reportTimeoutMs: cfg.reportTimeoutMs, now: opts.now },
    );
  });

  return {
    get token() {
      return token();
    },
    get events() {
      return events();
    },
    get data() {
      return data();
    },
    get reporting() {
      return reporting();
    },
    async close() {
      await Promise.all(built.splice(0).map((c) => c.close()));
    },
  };
}
