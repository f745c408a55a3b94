// Configuration: environment variables, then a .env file, then an optional config file (JSON or YAML), then
// the defaults; validated by zod at start, URL settings held to their transport rules (https off loopback),
// every path made absolute once. Every setting is optional at load time; a command asks for the ones it
// needs with requireSettings(), which names every missing one at once with what to do.
import { DEFAULT_STORE_MEMORY, MIN_STORE_MEMORY, SIZE_RE, sizeBytes } from './size.ts';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { REGIONS } from '../contract/regions.ts';
import { ConfigError } from './errors.ts';
import { parseDotenv, readDotenv } from './dotenv.ts';
import { readConfigFile } from './config-file.ts';

export { parseDotenv } from './dotenv.ts';
import { didYouMean, editDistance, nearestNames } from './suggest.ts';
import { snapshotPathProblems } from './snapshot-path.ts';
import { lakeCatalog, lakeSecrets, maskLake, storeSettingProblem } from './lake-setting.ts';
import { httpsProblem, maskUrl, secretUrlParts, smtpProblem, urlSecrets } from './urls.ts';
import { metricsAddrProblem } from './metrics-addr.ts';
import { JOURNAL_MIN_FREE_DEFAULT } from './journal-space.ts';

export interface SettingDef<K extends string = string, S extends z.ZodType = z.ZodType> {
  /** camelCase key, also the key in a config file */
  key: K;
  env: string;
  description: string;
  /** default written beside the option; undefined means "no default" */
  default?: string;
  secret?: boolean;
  /** The value's schema: its output is the setting's type in Config. */
  schema: S;
  group: string;
  /** A file or folder: made absolute against the working folder when the configuration loads. */
  path?: boolean;
  /** Default: this path inside the data folder (CBP_DATA_DIR), so moving the data folder moves it too. */
  underDataDir?: string;
  /** A URL held to a transport rule at load: https (plain http only on loopback), or SMTP over TLS. */
  transport?: 'https' | 'smtp';
  /** A store setting whose libpq string's password is masked when shown and redacted from logs (lib/lake-setting.ts). */
  lake?: boolean;
}

const url = z.string().url('must be a URL such as https://host/path');
const str = z.string().min(1, 'must not be empty');
const int = z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number');
const port = z.coerce.number({ error: 'must be a port number 0-65535' }).int('must be a port number 0-65535').min(0, 'must be a port number 0-65535').max(65535, 'must be a port number 0-65535');
const size = z.string().regex(SIZE_RE, 'must be a size such as 192MB or 2GB');
/** The store's memory limit: at least MIN_STORE_MEMORY (store/ratio-inputs.ts computes in statements sized to it). */
const storeSize = size.refine((v) => sizeBytes(v) >= MIN_STORE_MEMORY, 'must be at least 128MB (DuckDB needs it to compute the ratio inputs)');
/** A Visa region (contract/regions.ts), any letter case: eu is EU. */
const region = z
  .string()
  .transform((v) => v.trim().toUpperCase())
  .pipe(z.enum(REGIONS, { error: (i) => `must be one of ${REGIONS.join(', ')} (got ${JSON.stringify(i.input)})` }));
/** host:port of a /metrics endpoint, or off (lib/metrics-http.ts). */
const metricsAddr = str.superRefine((v, c) => {
  const p = metricsAddrProblem(v);
  if (p) c.addIssue({ code: 'custom', message: p });
});
const bool = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0', 'yes', 'no'])])
  .transform((v) => v === true || v === 'true' || v === '1' || v === 'yes');

type SettingExtra = Pick<SettingDef, 'default' | 'secret' | 'path' | 'underDataDir' | 'transport' | 'lake'>;

/** One setting; its key, schema and extras keep their own types, from which Config is inferred. */
function s<K extends string, S extends z.ZodType, E extends SettingExtra = {}>(
  group: string,
  key: K,
  env: string,
  schema: S,
  description: string,
  extra?: E,
): SettingDef<K, S> & E {
  return { group, key, env, schema, description, ...extra } as SettingDef<K, S> & E;
}

/** Every setting cbp reads. .env.example is checked against this list by a test. */
export const SETTINGS = [
  s('service', 'authBaseUrl', 'CBP_AUTH_BASE_URL', url, 'Token interface base, with its v1 segment (e.g. https://auth.example.com/v1)', { transport: 'https' }),
  s('service', 'eventsBaseUrl', 'CBP_EVENTS_BASE_URL', url, 'Events interface base, with its v1 segment', { transport: 'https' }),
  s('service', 'dataBaseUrl', 'CBP_DATA_BASE_URL', url, 'Order data interface base (production ends in /v1, sandbox in /stage)', { transport: 'https' }),
  s('service', 'reportingBaseUrl', 'CBP_REPORTING_BASE_URL', url, 'Reporting interface base (no version segment)', { transport: 'https' }),
  s('service', 'apiSecret', 'CBP_API_SECRET', str, 'Long-lived API secret exchanged for bearer tokens (token interface)', { secret: true }),
  s('service', 'dataUsername', 'CBP_DATA_USERNAME', str, 'Order data interface username'),
  s('service', 'dataPassword', 'CBP_DATA_PASSWORD', str, 'Order data interface password', { secret: true }),
  s('service', 'reportingKey', 'CBP_REPORTING_KEY', str, 'Reporting interface bearer key', { secret: true }),
  s('service', 'companyToken', 'CBP_COMPANY_TOKEN', str, 'Company token sent in every reporting request body', { secret: true }),
  s('http', 'httpTimeoutMs', 'CBP_HTTP_TIMEOUT_MS', int.min(1), 'Timeout of one HTTP request to the service, in ms', { default: '30000' }),
  s('http', 'reportTimeoutMs', 'CBP_REPORT_TIMEOUT_MS', int.min(1), 'Timeout of one report download (body included), in ms', { default: '600000' }),
  s('http', 'httpRetries', 'CBP_HTTP_RETRIES', int.min(0), 'Retries of a failed retryable request (network error, 429, 5xx)', { default: '5' }),
  s('store', 'dataDir', 'CBP_DATA_DIR', str, 'Folder of the store, landing files, journal and snapshot (relative paths are to the working folder)', { default: 'data', path: true }),
  s('store', 'dbPath', 'CBP_DB_PATH', str, 'DuckDB file of the store (unset: <CBP_DATA_DIR>/cbp.duckdb)', { path: true, underDataDir: 'cbp.duckdb' }),
  s('store', 'snapshotPath', 'CBP_SNAPSHOT_PATH', str, 'Read-only snapshot analysts query (unset: <CBP_DATA_DIR>/published/cbp.duckdb)', { path: true, underDataDir: 'published/cbp.duckdb' }),
  s('store', 'store', 'CBP_STORE', str.superRefine((v, c) => {
    const p = storeSettingProblem(v);
    if (p) c.addIssue({ code: 'custom', message: p });
  }), 'The store: unset, the DuckDB file of CBP_DB_PATH; or a DuckLake lake catalogued in PostgreSQL, ducklake:postgres:<libpq string> (dbname=cbp host=db.example.com user=cbp; its password is masked, PGPASSWORD or ~/.pgpass keep it out of the setting), with CBP_LAKE_DATA_PATH', { lake: true }),
  s('store', 'lakeDataPath', 'CBP_LAKE_DATA_PATH', str, "The lake's data files (Parquet): a folder every host of cbp reaches (a shared file system), or s3://bucket/prefix with the usual AWS_* settings"),
  s('store', 'lakeStatementTimeout', 'CBP_LAKE_STATEMENT_TIMEOUT', int.min(0, 'must be 0 or more seconds'), "Seconds a statement on a lake may wait before cbp gives it up as the catalog not answering (a PostgreSQL frozen or cut off): the command fails with CBP_ERR_STORE_UNAVAILABLE; 0: no limit", { default: '300' }),
  s('store', 'lakeExtensionsDir', 'CBP_LAKE_EXTENSIONS_DIR', str, 'Folder of the DuckDB extensions a lake needs (ducklake, postgres, httpfs), laid out as npm run lake:install leaves them (unset: .tools/duckdb-extensions in the cbp package)', { path: true }),
  s('store', 'awsAccessKeyId', 'AWS_ACCESS_KEY_ID', str, "S3 access key of a lake whose CBP_LAKE_DATA_PATH is s3://… (unset: the AWS credential chain: its files, the instance's role)", { secret: true }),
  s('store', 'awsSecretAccessKey', 'AWS_SECRET_ACCESS_KEY', str, 'S3 secret key for AWS_ACCESS_KEY_ID', { secret: true }),
  s('store', 'awsSessionToken', 'AWS_SESSION_TOKEN', str, 'S3 session token, with temporary credentials', { secret: true }),
  s('store', 'awsRegion', 'AWS_REGION', str, "Region of the lake's S3 bucket"),
  s('store', 'awsEndpointUrl', 'AWS_ENDPOINT_URL', url, 'S3-compatible endpoint instead of AWS (http://host:port or https://host): SeaweedFS, MinIO, Ceph; path-style URLs'),
  s('store', 'storeMemoryLimit', 'CBP_STORE_MEMORY_LIMIT', storeSize, 'DuckDB memory limit of the store, at least 128MB (at 192MB a 1,000,000-row report loads within ~340 MB of process RSS, and an alert evaluation of 10,000 MIDs x 36 months, with the kept ratio table it writes, within ~500 MB)', { default: DEFAULT_STORE_MEMORY }),
  s('store', 'storeThreads', 'CBP_STORE_THREADS', int.min(1, 'must be 1 or more').max(256, 'must be at most 256'), "DuckDB threads of each store this process opens (unset: DuckDB's own, the machine's cores); lower it on a host cbp shares with other services"),
  s('store', 'retentionDays', 'CBP_RETENTION_DAYS', int.min(1, 'must be 1 or more (unset: keep every raw file)'), 'Opt-in: days the maintenance step (cbp db maintain) keeps landing files and archived journal segments the store has loaded; older ones are deleted and reported (unset: every raw file is kept, the raw-first rule)'),
  s('webhook', 'webhookUsername', 'CBP_WEBHOOK_USERNAME', str, 'Basic auth username the service uses when pushing events'),
  s('webhook', 'webhookPassword', 'CBP_WEBHOOK_PASSWORD', str, 'Basic auth password the service uses when pushing events', { secret: true }),
  s('webhook', 'webhookPreviousPassword', 'CBP_WEBHOOK_PREVIOUS_PASSWORD', str, 'During a rotation, the old password, accepted beside CBP_WEBHOOK_PASSWORD until removed', { secret: true }),
  s('webhook', 'webhookHost', 'CBP_WEBHOOK_HOST', str, 'Address the receiver listens on', { default: '127.0.0.1' }),
  s('webhook', 'webhookPort', 'CBP_WEBHOOK_PORT', port, 'Port the receiver listens on (0: any free port)', { default: '8787' }),
  s('webhook', 'webhookPath', 'CBP_WEBHOOK_PATH', str, 'Path events are posted to', { default: '/events' }),
  s('webhook', 'webhookPublicUrl', 'CBP_WEBHOOK_PUBLIC_URL', url, 'https address the service pushes to (the receiver or its TLS proxy)', { transport: 'https' }),
  s('webhook', 'journalDir', 'CBP_JOURNAL_DIR', str, 'Folder of the event journal (unset: <CBP_DATA_DIR>/journal)', { path: true, underDataDir: 'journal' }),
  s('webhook', 'journalSegmentMaxBytes', 'CBP_JOURNAL_SEGMENT_MAX_BYTES', int.min(1), 'Seal a journal segment once it holds this many bytes', { default: '67108864' }),
  s('webhook', 'journalSegmentMaxAgeMs', 'CBP_JOURNAL_SEGMENT_MAX_AGE_MS', int.min(1), 'Seal a non-empty journal segment this long after it was opened, in ms (ingest reads sealed ones only)', { default: '60000' }),
  s('webhook', 'webhookBodyLimit', 'CBP_WEBHOOK_BODY_LIMIT', int.min(1), 'Largest event body the receiver accepts, in bytes (413 above)', { default: '1048576' }),
  s('webhook', 'webhookTlsCert', 'CBP_WEBHOOK_TLS_CERT', str, 'PEM certificate file: the receiver serves https itself', { path: true }),
  s('webhook', 'webhookTlsKey', 'CBP_WEBHOOK_TLS_KEY', str, 'PEM key file for CBP_WEBHOOK_TLS_CERT', { path: true }),
  s('webhook', 'webhookBehindTlsProxy', 'CBP_WEBHOOK_BEHIND_TLS_PROXY', bool, 'A TLS proxy terminates https in front of the receiver: allows plain http on an address other than loopback', { default: 'false' }),
  s('webhook', 'webhookMaxConnections', 'CBP_WEBHOOK_MAX_CONNECTIONS', int.min(1), 'Connections the receiver holds at once; more are dropped at accept', { default: '1024' }),
  s('webhook', 'journalMinFree', 'CBP_JOURNAL_MIN_FREE', size, 'Free space under the journal below which the receiver refuses pushes (503) and /readyz answers 503', { default: JOURNAL_MIN_FREE_DEFAULT }),
  s('webhook', 'metricsAddr', 'CBP_METRICS_ADDR', metricsAddr, "host:port of the receiver's Prometheus /metrics (cbp webhook), never its public port; off: none", { default: '127.0.0.1:9787' }),
  s('webhook', 'subscriptionEmail', 'CBP_SUBSCRIPTION_EMAIL', z.string().email('must be an e-mail address'), 'E-mail that receives the service\'s subscription notices'),
  s('alerts', 'thresholdsFile', 'CBP_THRESHOLDS_FILE', str, 'Thresholds file (JSON or YAML); default: the reference programs', { path: true }),
  s('alerts', 'defaultRegion', 'CBP_DEFAULT_REGION', region, `Visa region a MID is evaluated under when the thresholds file gives it none (mids.<mid>.region): one of ${REGIONS.join(', ')}; it decides which VAMP thresholds apply (unset: the thresholds file's default_region, else US)`),
  s('alerts', 'alertWebhookUrl', 'CBP_ALERT_WEBHOOK_URL', url, 'Generic webhook that receives alert notices (JSON, HMAC-SHA256 signed; https, plain http only on loopback; tokens in its path, as Zapier, Discord and Teams hooks have, are secret)', { secret: true, transport: 'https' }),
  s('alerts', 'alertWebhookSecret', 'CBP_ALERT_WEBHOOK_SECRET', str, 'HMAC-SHA256 key for the alert webhook signature', { secret: true }),
  s('alerts', 'slackWebhookUrl', 'CBP_SLACK_WEBHOOK_URL', url, 'Slack-compatible incoming webhook for alert notices (https; its path is a secret token)', { secret: true, transport: 'https' }),
  s('alerts', 'smtpUrl', 'CBP_SMTP_URL', str, 'SMTP server for alert e-mails over TLS: smtps://user:pass@host:465, or smtp://user:pass@host:587?requireTLS=true (STARTTLS); plain smtp:// only on loopback', { secret: true, transport: 'smtp' }),
  s('alerts', 'alertEmailFrom', 'CBP_ALERT_EMAIL_FROM', str, 'Sender of alert e-mails', { default: 'cbp@localhost' }),
  s('alerts', 'alertEmailTo', 'CBP_ALERT_EMAIL_TO', str, 'Recipients of alert e-mails, comma-separated'),
  s('alerts', 'digestAt', 'CBP_DIGEST_AT', z.string().trim().toLowerCase().regex(/^(off|(daily|mon|tue|wed|thu|fri|sat|sun) \d{1,2}:\d{2})$/, 'must be "<day> HH:MM" (day: mon..sun or daily) or "off"'), 'When the digest e-mail goes out (a schedule of its own, in CBP_SCHEDULE_TIMEZONE): "<day> HH:MM" with day mon..sun or daily, or off; sent to CBP_ALERT_EMAIL_TO over CBP_SMTP_URL', { default: 'mon 07:00' }),
  s('alerts', 'digestDueDays', 'CBP_DIGEST_DUE_DAYS', int.min(0), 'The digest\'s "due soon" cases: open chargebacks due within this many days of the service\'s day (overdue ones too)', { default: '7' }),
  s('alerts', 'dueNoticeDays', 'CBP_DUE_NOTICE_DAYS', int.min(0), 'Days before a chargeback\'s representment due date its `due` notice goes out (once per case; again once overdue), judged by the service\'s clock', { default: '5' }),
  s('temporal', 'temporalAddress', 'TEMPORAL_ADDRESS', str, 'Temporal frontend host:port', { default: '127.0.0.1:7233' }),
  s('temporal', 'temporalNamespace', 'TEMPORAL_NAMESPACE', str, 'Temporal namespace', { default: 'default' }),
  s('temporal', 'temporalTaskQueue', 'TEMPORAL_TASK_QUEUE', str, 'Task queue of the cbp worker', { default: 'cbp' }),
  s('temporal', 'ingestTaskQueue', 'CBP_INGEST_TASK_QUEUE', str, "This host's own task queue for ingesting its journal, with receivers on several hosts (docs/lake.md): cbp worker serves it besides TEMPORAL_TASK_QUEUE, and cbp schedule apply gives it an ingest schedule of its own (cbp-ingest-<queue>). Unset: one ingest schedule on TEMPORAL_TASK_QUEUE"),
  s('temporal', 'workerMetricsAddr', 'CBP_WORKER_METRICS_ADDR', metricsAddr, "host:port of the worker's Prometheus /metrics (cbp worker: the Temporal SDK's metrics, activities, pipeline gauges); off: none", { default: '127.0.0.1:9788' }),
  s('temporal', 'temporalApiKey', 'TEMPORAL_API_KEY', str, 'API key for Temporal Cloud', { secret: true }),
  s('temporal', 'temporalTlsCert', 'TEMPORAL_TLS_CERT', str, 'Client certificate file for mTLS to Temporal', { path: true }),
  s('temporal', 'temporalTlsKey', 'TEMPORAL_TLS_KEY', str, 'Client key file for mTLS to Temporal', { path: true }),
  s('schedule', 'nightlyAt', 'CBP_NIGHTLY_AT', z.string().regex(/^\d{1,2}:\d{2}$/, 'must be HH:MM (24-hour)'), 'Time of day of the nightly run (HH:MM in CBP_SCHEDULE_TIMEZONE)', { default: '02:30' }),
  s('schedule', 'scheduleTimezone', 'CBP_SCHEDULE_TIMEZONE', str, 'IANA time zone of CBP_NIGHTLY_AT (report windows stay UTC days)', { default: 'UTC' }),
  s('schedule', 'ingestEvery', 'CBP_INGEST_EVERY', str, 'Interval of the event ingest schedule (e.g. 5m, 30s, 1h)', { default: '5m' }),
  s('schedule', 'windowDays', 'CBP_WINDOW_DAYS', int.min(1), 'Days per chargebacks / prevention report window', { default: '7' }),
  s('schedule', 'lookbackDays', 'CBP_LOOKBACK_DAYS', int.min(1), 'Days the nightly run re-fetches, its own day included', { default: '60' }),
  s('schedule', 'reportParallelism', 'CBP_REPORT_PARALLELISM', int.min(1), 'Report windows fetched at once by nightly and backfill', { default: '2' }),
  s('sandbox', 'sandboxApiSecret', 'CBP_SANDBOX_API_SECRET', str, 'API secret the sandbox accepts, token interface (unset: sandbox-api-secret)', { secret: true }),
  s('sandbox', 'sandboxDataUsername', 'CBP_SANDBOX_DATA_USERNAME', str, 'Order data username the sandbox accepts (unset: sandbox-user)'),
  s('sandbox', 'sandboxDataPassword', 'CBP_SANDBOX_DATA_PASSWORD', str, 'Order data password the sandbox accepts (unset: sandbox-password)', { secret: true }),
  s('sandbox', 'sandboxReportingKey', 'CBP_SANDBOX_REPORTING_KEY', str, 'Reporting bearer key the sandbox accepts (unset: sandbox-reporting-key)', { secret: true }),
  s('sandbox', 'sandboxCompanyToken', 'CBP_SANDBOX_COMPANY_TOKEN', str, 'Company token the sandbox accepts (unset: sandbox-company-token)', { secret: true }),
  s('sandbox', 'sandboxTokenTtlSeconds', 'CBP_SANDBOX_TOKEN_TTL_SECONDS', int.min(1), 'Lifetime of sandbox tokens, in real seconds', { default: '300' }),
  s('sandbox', 'sandboxDeliveryTimeoutMs', 'CBP_SANDBOX_DELIVERY_TIMEOUT_MS', int.min(1), 'Timeout of one sandbox webhook request, in ms', { default: '5000' }),
  s('general', 'logLevel', 'CBP_LOG_LEVEL', z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'Log level', { default: 'info' }),
] as const;

/** A setting that always has a value once loaded: it has a default, or it is a path under the data folder. */
type AlwaysSet = { default: string } | { underDataDir: string };
const alwaysSet = (d: SettingDef): boolean => d.default !== undefined || d.underDataDir !== undefined;

type SettingsShape<T extends readonly SettingDef[]> = {
  [D in T[number] as D['key']]: D extends AlwaysSet ? D['schema'] : z.ZodOptional<D['schema']>;
};

/**
 * The loaded configuration's schema, made from SETTINGS: a setting that always has a value (a default, or a
 * path under the data folder) is required, any other optional. loadConfig's result parses with it.
 */
export const SETTINGS_SCHEMA = z.object(
  Object.fromEntries(SETTINGS.map((d) => [d.key, alwaysSet(d) ? d.schema : d.schema.optional()])) as SettingsShape<typeof SETTINGS>,
);

/** The loaded configuration: one property per setting, typed by its schema, paths absolute. */
export type Config = z.infer<typeof SETTINGS_SCHEMA>;
/** A setting's key (its camelCase name). */
export type SettingKey = keyof Config;

const BY_KEY = new Map<string, SettingDef>(SETTINGS.map((d) => [d.key, d]));
const BY_ENV = new Map<string, SettingDef>(SETTINGS.map((d) => [d.env, d]));

/**
 * A data folder's own settings (`<CBP_DATA_DIR>/settings.json`, which cbp demo writes): how its data is judged,
 * so pointing at the folder gives its verdicts. Below every other source, above the defaults; relative paths
 * in it are to the folder. Only these settings may be there.
 */
export const DATA_DIR_SETTINGS = 'settings.json';
const DATA_DIR_KEYS = new Set(['thresholdsFile', 'defaultRegion']);

function readDataDirSettings(dir: string, raw: Record<string, unknown>, origin: Record<string, string>, problems: string[]): void {
  const file = path.join(dir, DATA_DIR_SETTINGS);
  if (!existsSync(file)) return;
  const shown = `data folder settings ${file}`;
  for (const [k, v] of Object.entries(readConfigFile(file, file))) {
    const d = BY_KEY.get(k) ?? BY_ENV.get(k);
    if (!d || !DATA_DIR_KEYS.has(d.key)) {
      const allowed = [...DATA_DIR_KEYS].map((x) => BY_KEY.get(x)!.env).join(', ');
      problems.push(`${shown}: "${k}" cannot be set there (only ${allowed}: how the folder's data is judged)`);
      continue;
    }
    if (origin[d.key] !== undefined && origin[d.key] !== 'default') continue;
    raw[d.key] = d.path && typeof v === 'string' ? path.resolve(dir, v) : v;
    origin[d.key] = shown;
  }
}

/** Names a .env may hold besides the settings: the config file's location. */
const DOTENV_EXTRA = new Set(['CBP_CONFIG', 'CBP_DEBUG']);
const UNKNOWN_HINT = ' (known: see .env.example)';
export interface LoadOptions {
  /** The environment (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Config file; default CBP_CONFIG from the environment, then from the .env file. */
  file?: string;
  /** A .env file to read if it exists; the CLI passes `.env` (in the working folder). None when unset. */
  dotenv?: string;
  /** Folder relative paths are resolved against (default: the working folder). */
  cwd?: string;
  overrides?: Record<string, unknown>;
}

/** Where each setting's value came from: environment, .env, config file, default (kept beside each Config). */
const SOURCES = new WeakMap<object, Record<string, string>>();

export function settingSources(cfg: Config): Record<string, string> {
  return SOURCES.get(cfg) ?? {};
}

/**
 * How a set value may be shown (`cbp config show`): a URL with its password, query values and (for a secret
 * URL) its token path segments masked but its host kept; any other secret hidden whole; the rest as is.
 */
export function shownValue(d: SettingDef, value: unknown): unknown {
  if (d.lake && typeof value === 'string') return maskLake(value);
  const masked = d.transport && typeof value === 'string' ? maskUrl(value, { secretPath: d.secret }) : null;
  if (masked !== null) return masked;
  return d.secret ? '(set, hidden)' : value;
}

/** A refused value in a problem: quoted, a URL's secret parts masked, any other secret hidden whole. */
function problemValue(d: SettingDef, value: unknown): string {
  if (d.lake && typeof value === 'string') return JSON.stringify(maskLake(value));
  const masked = d.transport && typeof value === 'string' ? maskUrl(value, { secretPath: d.secret }) : null;
  if (masked !== null) return JSON.stringify(masked);
  return d.secret ? '(hidden)' : JSON.stringify(value);
}

/** The default as written for people: the data folder's files read <CBP_DATA_DIR>/... */
export function defaultText(d: SettingDef): string | undefined {
  return d.underDataDir ? `<CBP_DATA_DIR>/${d.underDataDir}` : d.default;
}

const nonEmpty = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);

/**
 * Loads and validates the configuration. Sources, first wins: command-line overrides, the environment, the
 * .env file (opts.dotenv), the config file (keys are the camelCase names or the environment variable names),
 * the defaults. Paths come out absolute (relative ones against the working folder), the store, snapshot and
 * journal under the data folder unless set; URL settings must meet their transport rule.
 */
export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const problems: string[] = [];
  const dotenvShown = opts.dotenv;
  const dotenv = opts.dotenv ? readDotenv(path.resolve(cwd, opts.dotenv), opts.dotenv) : undefined;
  const file = opts.file ?? nonEmpty(env.CBP_CONFIG) ?? nonEmpty(dotenv?.CBP_CONFIG);
  const raw: Record<string, unknown> = {};
  const origin: Record<string, string> = {};
  for (const d of SETTINGS) if (d.default !== undefined) { raw[d.key] = d.default; origin[d.key] = 'default'; }
  if (file) {
    const fromFile = readConfigFile(path.resolve(cwd, file), file);
    for (const [k, v] of Object.entries(fromFile)) {
      const d = BY_KEY.get(k) ?? BY_ENV.get(k);
      if (!d) { problems.push(`config file ${file}: unknown setting "${k}"${didYouMean(k, [...BY_KEY.keys(), ...BY_ENV.keys()], UNKNOWN_HINT)}`); continue; }
      raw[d.key] = typeof v === 'number' || typeof v === 'boolean' ? String(v) : v;
      origin[d.key] = `config file ${file}`;
    }
  }
  if (dotenv) {
    for (const [k, v] of Object.entries(dotenv)) {
      const d = BY_ENV.get(k);
      if (!d) {
        // Other tools' variables may share the file; a CBP_ name cbp does not know, or one a letter or two from a
        // known name (CPB_DATA_DIR, TEMPORAL_ADRESS), is a typo.
        if (DOTENV_EXTRA.has(k)) continue;
        const near = nearestNames(k, BY_ENV.keys()).filter((n) => editDistance(k, n) <= 2);
        if (k.startsWith('CBP_') || near.length) problems.push(`${dotenvShown}: unknown setting "${k}"${didYouMean(k, BY_ENV.keys(), UNKNOWN_HINT)}`);
        continue;
      }
      if (v !== '') { raw[d.key] = v; origin[d.key] = dotenvShown!; }
    }
  }
  for (const d of SETTINGS) {
    const v = env[d.env];
    if (v !== undefined && v !== '') { raw[d.key] = v; origin[d.key] = 'environment'; }
  }
  for (const [k, v] of Object.entries(opts.overrides ?? {})) if (v !== undefined) { raw[k] = v; origin[k] = 'command line'; }
  if (typeof raw.dataDir === 'string' && raw.dataDir !== '') readDataDirSettings(path.resolve(cwd, raw.dataDir), raw, origin, problems);
  const out: Record<string, unknown> = {};
  for (const d of SETTINGS) {
    if (raw[d.key] === undefined) continue;
    const r = d.schema.safeParse(raw[d.key]);
    const transport = r.success && typeof r.data === 'string' && d.transport ? (d.transport === 'smtp' ? smtpProblem : httpsProblem)(r.data) : null;
    if (r.success && !transport) out[d.key] = r.data;
    else {
      const why = transport ?? (r.success ? '' : r.error.issues.map((i) => i.message.replace(/^Invalid input: /, '')).join('; '));
      problems.push(`${d.env} (from ${origin[d.key]}) = ${problemValue(d, raw[d.key])}: ${why}`);
    }
  }
  if (problems.length) throw new ConfigError(problems);
  // Paths once, here: every reader of the configuration sees the same absolute files whatever its cwd.
  if (typeof out.dataDir === 'string') out.dataDir = path.resolve(cwd, out.dataDir);
  for (const d of SETTINGS) {
    if (d.path && typeof out[d.key] === 'string') out[d.key] = path.resolve(cwd, out[d.key] as string);
    else if (d.underDataDir && typeof out.dataDir === 'string') {
      out[d.key] = path.join(out.dataDir, ...d.underDataDir.split('/'));
      origin[d.key] = origin.dataDir === 'default' ? 'default' : 'under CBP_DATA_DIR';
    }
  }
  const misplaced = snapshotPlaceProblems(out, file === undefined ? undefined : path.resolve(cwd, file));
  if (typeof out.store === 'string' && lakeCatalog(out.store) !== null && typeof out.lakeDataPath !== 'string') {
    misplaced.push('CBP_LAKE_DATA_PATH is not set; a lake (CBP_STORE=ducklake:…) needs it: the folder or s3:// prefix of its data files');
  }
  // A local data path is made absolute like the other paths (an s3:// or other URL is kept as it is).
  if (typeof out.lakeDataPath === 'string' && !/^[a-z][a-z0-9+.-]*:\/\//i.test(out.lakeDataPath)) out.lakeDataPath = path.resolve(cwd, out.lakeDataPath);
  if (misplaced.length) throw new ConfigError(misplaced);
  SOURCES.set(out, origin);
  return out as Config;
}

/**
 * The snapshot is published by renaming a copy onto its path: that path may not be the store (or its WAL),
 * another file setting or the config file, nor lie in the journal or landing folder (lib/snapshot-path.ts).
 */
function snapshotPlaceProblems(out: Record<string, unknown>, configFile: string | undefined): string[] {
  if (typeof out.snapshotPath !== 'string') return [];
  const files: Array<{ path: string; name: string }> = [];
  for (const d of SETTINGS) {
    if (d.path && !['dataDir', 'dbPath', 'snapshotPath', 'journalDir'].includes(d.key) && typeof out[d.key] === 'string') files.push({ path: out[d.key] as string, name: d.env });
  }
  if (configFile) files.push({ path: configFile, name: 'the config file' });
  const dirs: Array<{ path: string; name: string }> = [];
  if (typeof out.journalDir === 'string') dirs.push({ path: out.journalDir, name: 'CBP_JOURNAL_DIR (the event journal)' });
  if (typeof out.dataDir === 'string') dirs.push({ path: path.join(out.dataDir, 'landing'), name: 'the landing folder <CBP_DATA_DIR>/landing' });
  const store = typeof out.dbPath === 'string' ? { path: out.dbPath, name: 'CBP_DB_PATH (the store)' } : undefined;
  return snapshotPathProblems({ snapshot: { path: out.snapshotPath, name: 'CBP_SNAPSHOT_PATH' }, store, files, dirs });
}

/** The configuration once `keys` are known to be set. */
export type ConfigWith<K extends SettingKey> = Config & { [P in K]-?: Exclude<Config[P], undefined> };

/**
 * Throws one ConfigError naming every missing setting among keys, each with what it is for; afterwards the
 * type says they are set (`cfg.apiSecret` is a string).
 */
export function requireSettings<K extends SettingKey>(cfg: Config, keys: readonly K[], forWhat: string): asserts cfg is ConfigWith<K> {
  const missing = keys.filter((k) => cfg[k] === undefined || cfg[k] === '');
  if (missing.length === 0) return;
  throw new ConfigError(
    missing.map((k) => {
      const d = BY_KEY.get(k)!;
      return `${d.env} is not set; ${forWhat} needs it: ${d.description}`;
    }),
  );
}

/**
 * Values that must never be printed: every secret setting's value, and the secret parts of every URL setting
 * (its username and password, query values that are not flags or numbers; for a secret URL, one both `secret`
 * and a URL such as a notifier's, also the path after its host and each token segment of it: secretUrlParts).
 */
export function secretValues(cfg: Config): string[] {
  const out = new Set<string>();
  for (const d of SETTINGS) {
    const v = cfg[d.key];
    if (typeof v !== 'string' || v.length === 0) continue;
    const parts = d.lake ? lakeSecrets(v) : d.transport ? (d.secret ? secretUrlParts(v) : urlSecrets(v)) : d.secret ? [v] : [];
    for (const p of parts) out.add(p);
  }
  return [...out];
}
