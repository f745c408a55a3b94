// lib/config.ts: sources and their order, file formats, and messages that name settings but never secrets.
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SETTINGS, SETTINGS_SCHEMA, loadConfig, parseDotenv, requireSettings, secretValues, settingSources, type Config } from '../lib/config.ts';
import { envExample } from '../lib/env-example.ts';
import { ConfigError } from '../lib/errors.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

/** The ConfigError a call throws (fails the test if it throws nothing or something else). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it("takes how a data folder's data is judged from its settings.json (as cbp demo writes it), below every other source", () => {
    const data = path.join(dir, 'judged-data');
    fs.mkdirSync(data, { recursive: true });
    fs.writeFileSync(path.join(data, 'settings.json'), JSON.stringify({ CBP_THRESHOLDS_FILE: 'thresholds.json', defaultRegion: 'cemea' }));
    const cfg = loadConfig({ env: { CBP_DATA_DIR: data }, cwd: dir });
    expect(cfg.thresholdsFile).toBe(path.join(data, 'thresholds.json'));
    expect(cfg.defaultRegion).toBe('CEMEA');
    expect(settingSources(cfg).thresholdsFile).toBe(`data folder settings ${path.join(data, 'settings.json')}`);
    // The environment (and .env, the config file) wins over the folder's settings.
    const own = loadConfig({ env: { CBP_DATA_DIR: data, CBP_THRESHOLDS_FILE: 'mine.json' }, cwd: dir });
    expect(own.thresholdsFile).toBe(path.join(dir, 'mine.json'));
    // Only how the data is judged may be there: not credentials, not other paths.
    fs.writeFileSync(path.join(data, 'settings.json'), JSON.stringify({ CBP_DB_PATH: '/elsewhere.duckdb' }));
    expect(configError(() => loadConfig({ env: { CBP_DATA_DIR: data }, cwd: dir })).message).toContain('"CBP_DB_PATH" cannot be set there (only CBP_THRESHOLDS_FILE, CBP_DEFAULT_REGION');
  });

  it('applies the defaults written beside each setting when nothing is set', () => {
    const cfg = loadConfig({ env: {}, cwd: dir });
    expect(cfg.httpTimeoutMs).toBe(30000);
    expect(cfg.dbPath).toBe(path.join(dir, 'data', 'cbp.duckdb'));
    expect(cfg.webhookPort).toBe(8787);
    expect(cfg.apiSecret).toBeUndefined();
  });

  it('reads a JSON config file (camelCase keys)', () => {
    const f = file('a.json', JSON.stringify({ httpTimeoutMs: 1234, dbPath: '/tmp/x.duckdb', reportingBaseUrl: 'https://rep.example' }));
    expect(loadConfig({ env: {}, file: f })).toMatchObject({ httpTimeoutMs: 1234, dbPath: '/tmp/x.duckdb', reportingBaseUrl: 'https://rep.example' });
  });

  it('reads a YAML config file (.yaml and .yml, env-variable keys too)', () => {
    const f1 = file('a.yaml', 'httpRetries: 2\nCBP_WEBHOOK_PATH: /hooks\n');
    expect(loadConfig({ env: {}, file: f1 })).toMatchObject({ httpRetries: 2, webhookPath: '/hooks' });
    const f2 = file('b.yml', 'logLevel: debug\n');
    expect(loadConfig({ env: {}, file: f2 }).logLevel).toBe('debug');
  });

  it('lets an environment variable override the config file', () => {
    const f = file('override.yaml', 'httpTimeoutMs: 1000\ndbPath: from-file.duckdb\n');
    const cfg = loadConfig({ env: { CBP_HTTP_TIMEOUT_MS: '2000' }, file: f, cwd: dir });
    expect(cfg.httpTimeoutMs).toBe(2000);
    expect(cfg.dbPath).toBe(path.join(dir, 'from-file.duckdb'));
  });

  it('finds the config file through CBP_CONFIG', () => {
    const f = file('via-env.json', JSON.stringify({ dataDir: 'elsewhere' }));
    expect(loadConfig({ env: { CBP_CONFIG: f }, cwd: dir }).dataDir).toBe(path.join(dir, 'elsewhere'));
  });

  it('ignores an empty environment variable', () => {
    expect(loadConfig({ env: { CBP_DB_PATH: '' }, cwd: dir }).dbPath).toBe(path.join(dir, 'data', 'cbp.duckdb'));
  });

  it('reports an unknown key in the config file', () => {
    const f = file('unknown.json', JSON.stringify({ httpTimeoutMs: 5, dbPaht: 'typo.duckdb' }));
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.code).toBe('CBP_ERR_CONFIG');
    expect(e.message).toContain('unknown setting "dbPaht" (did you mean dbPath?)');
  });

  it('takes the store memory limit as a DuckDB size, and refuses anything else', () => {
    expect(loadConfig({ env: {} }).storeMemoryLimit).toBe('192MB');
    expect(loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: '2GB' } }).storeMemoryLimit).toBe('2GB');
    const e = configError(() => loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: 'lots' } }));
    expect(e.message).toContain('CBP_STORE_MEMORY_LIMIT');
    expect(e.message).toContain('must be a size such as 192MB or 2GB');
    // Too little for the store: said before anything opens it.
    const small = configError(() => loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: '100MB' } }));
    expect(small.message).toContain('CBP_STORE_MEMORY_LIMIT');
    expect(small.message).toContain('must be at least 128MB');
    expect(loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: '128MB' } }).storeMemoryLimit).toBe('128MB');
    expect(loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: '0.5 GiB' } }).storeMemoryLimit).toBe('0.5 GiB');
  });

  it('names an invalid value by its environment variable, with the value and what is expected', () => {
    const e = configError(() => loadConfig({ env: { CBP_WEBHOOK_PORT: '70000', CBP_HTTP_TIMEOUT_MS: 'soon' } }));
    expect(e.problems).toHaveLength(2);
    expect(e.message).toContain('CBP_WEBHOOK_PORT');
    expect(e.message).toContain('"70000"');
    expect(e.message).toContain('must be a port number 0-65535');
    expect(e.message).toContain('CBP_HTTP_TIMEOUT_MS');
    expect(e.message).toContain('"soon"');
  });

  it('names an invalid value from the file by its environment variable and the file', () => {
    const f = file('bad.yaml', 'webhookPublicUrl: not-a-url\n');
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.message).toContain('CBP_WEBHOOK_PUBLIC_URL');
    expect(e.message).toContain(f);
  });

  it('reports a config file that does not exist', () => {
    const e = configError(() => loadConfig({ env: {}, file: path.join(dir, 'missing.yaml') }));
    expect(e.message).toContain('missing.yaml does not exist');
  });

  it('reports a config file that is not an object', () => {
    const e = configError(() => loadConfig({ env: {}, file: file('list.json', '[1,2]') }));
    expect(e.message).toContain('must hold an object of settings');
  });
});

describe('the data folder and other paths', () => {
  it('puts the store, the snapshot and the journal in CBP_DATA_DIR when they are not set', () => {
    const cfg = loadConfig({ env: { CBP_DATA_DIR: '/srv/cbp' }, cwd: dir });
    expect(cfg.dataDir).toBe('/srv/cbp');
    expect(cfg.dbPath).toBe('/srv/cbp/cbp.duckdb');
    expect(cfg.snapshotPath).toBe('/srv/cbp/published/cbp.duckdb');
    expect(cfg.journalDir).toBe('/srv/cbp/journal');
  });

  it('follows a data folder set in the config file or a .env file too', () => {
    const f = file('datadir.yaml', 'dataDir: from-file\n');
    expect(loadConfig({ env: {}, file: f, cwd: dir }).journalDir).toBe(path.join(dir, 'from-file', 'journal'));
    const d = fs.mkdtempSync(path.join(dir, 'dotenv-'));
    fs.writeFileSync(path.join(d, '.env'), 'CBP_DATA_DIR=from-dotenv\n');
    expect(loadConfig({ env: {}, cwd: d, dotenv: '.env' }).snapshotPath).toBe(path.join(d, 'from-dotenv', 'published', 'cbp.duckdb'));
  });

  it('keeps an explicitly set store, snapshot or journal path over the data folder', () => {
    const cfg = loadConfig({ env: { CBP_DATA_DIR: '/srv/cbp', CBP_DB_PATH: '/fast/cbp.duckdb', CBP_JOURNAL_DIR: 'journal-here' }, cwd: dir });
    expect(cfg.dbPath).toBe('/fast/cbp.duckdb');
    expect(cfg.journalDir).toBe(path.join(dir, 'journal-here'));
    expect(cfg.snapshotPath).toBe('/srv/cbp/published/cbp.duckdb');
  });

  it('makes every path setting absolute against the working folder, once, at load', () => {
    const cfg = loadConfig({
      env: { CBP_DATA_DIR: './d', CBP_THRESHOLDS_FILE: 'rules/t.yaml', CBP_WEBHOOK_TLS_CERT: '../c.pem', TEMPORAL_TLS_KEY: '/etc/k.pem' },
      cwd: '/work/here',
    });
    expect(cfg).toMatchObject({
      dataDir: '/work/here/d',
      dbPath: '/work/here/d/cbp.duckdb',
      thresholdsFile: '/work/here/rules/t.yaml',
      webhookTlsCert: '/work/c.pem',
      temporalTlsKey: '/etc/k.pem',
    });
    for (const d of SETTINGS.filter((x) => x.path || x.underDataDir)) {
      if (cfg[d.key] !== undefined) expect(path.isAbsolute(cfg[d.key] as string), d.env).toBe(true);
    }
  });

  it('writes no default path that would not follow the data folder', () => {
    for (const d of SETTINGS) expect(d.default ?? '', d.env).not.toMatch(/^data\//);
    expect(envExample()).not.toMatch(/^CBP_(DB_PATH|SNAPSHOT_PATH|JOURNAL_DIR)=/m);
  });
});

describe('where the snapshot may be (publishing renames a copy onto its path)', () => {
  const place = () => {
    const root = fs.mkdtempSync(path.join(dir, 'place-'));
    const data = path.join(root, 'data');
    fs.mkdirSync(data);
    return { root, data, store: path.join(data, 'cbp.duckdb') };
  };
  const refused = (env: Record<string, string>, cwd: string) => configError(() => loadConfig({ env, cwd }));

  it('refuses CBP_SNAPSHOT_PATH naming the store, however it is spelled, naming both settings', () => {
    const { root, data, store } = place();
    for (const snap of [store, path.join(data, '.', 'sub', '..', 'cbp.duckdb'), 'data/cbp.duckdb']) {
      const e = refused({ CBP_DATA_DIR: data, CBP_SNAPSHOT_PATH: snap }, root);
      expect(e.problems).toHaveLength(1);
      expect(e.problems[0]).toMatch(/^CBP_SNAPSHOT_PATH \(.*\) and CBP_DB_PATH \(the store\) \(.*\) are the same file: .*every later write to the store would be lost/);
    }
    // Set both, to one file.
    expect(refused({ CBP_DB_PATH: '/srv/one.duckdb', CBP_SNAPSHOT_PATH: '/srv/one.duckdb' }, root).problems[0]).toContain('/srv/one.duckdb');
  });

  it('refuses it through a symlinked folder (before the store exists) and as a hard link of the store', () => {
    const { root, data, store } = place();
    fs.symlinkSync(data, path.join(root, 'alias'));
    expect(refused({ CBP_DATA_DIR: data, CBP_SNAPSHOT_PATH: path.join(root, 'alias', 'cbp.duckdb') }, root).problems[0]).toContain('are the same file');
    fs.writeFileSync(store, 'a store');
    fs.linkSync(store, path.join(root, 'hard.duckdb'));
    expect(refused({ CBP_DATA_DIR: data, CBP_SNAPSHOT_PATH: path.join(root, 'hard.duckdb') }, root).problems[0]).toContain('are the same file');
  });

  it("refuses the store's write-ahead log, another file setting, and the journal and landing folders", () => {
    const { root, data, store } = place();
    const base = { CBP_DATA_DIR: data };
    expect(refused({ ...base, CBP_SNAPSHOT_PATH: `${store}.wal` }, root).problems[0]).toMatch(/CBP_DB_PATH \(the store\)'s write-ahead log .* are the same file/);
    const rules = path.join(root, 'rules.yaml');
    expect(refused({ ...base, CBP_THRESHOLDS_FILE: rules, CBP_SNAPSHOT_PATH: rules }, root).problems[0]).toMatch(/and CBP_THRESHOLDS_FILE .* are the same file/);
    const journal = refused({ ...base, CBP_SNAPSHOT_PATH: path.join(data, 'journal', 'seg-000001-20260101T000000000Z.closed') }, root);
    expect(journal.problems[0]).toMatch(/lies in CBP_JOURNAL_DIR \(the event journal\)/);
    expect(refused({ ...base, CBP_JOURNAL_DIR: path.join(root, 'j'), CBP_SNAPSHOT_PATH: path.join(root, 'j', 'archive', 'x.duckdb') }, root).problems[0]).toContain('lies in CBP_JOURNAL_DIR');
    expect(refused({ ...base, CBP_SNAPSHOT_PATH: path.join(data, 'landing', 'cbp.duckdb') }, root).problems[0]).toContain('lies in the landing folder');
  });

  it('takes the default, and any file of its own (beside the store too)', () => {
    const { root, data } = place();
    expect(loadConfig({ env: { CBP_DATA_DIR: data }, cwd: root }).snapshotPath).toBe(path.join(data, 'published', 'cbp.duckdb'));
    expect(loadConfig({ env: { CBP_DATA_DIR: data, CBP_SNAPSHOT_PATH: path.join(data, 'snapshot.duckdb') }, cwd: root }).snapshotPath).toBe(path.join(data, 'snapshot.duckdb'));
    expect(loadConfig({ env: { CBP_DATA_DIR: data, CBP_SNAPSHOT_PATH: path.join(data, 'journal-copy.duckdb') }, cwd: root }).snapshotPath).toBe(path.join(data, 'journal-copy.duckdb'));
  });
});

describe('the .env file', () => {
  /** A fresh working folder holding the given .env text. */
  function workdir(dotenv?: string): string {
    const d = fs.mkdtempSync(path.join(dir, 'cwd-'));
    if (dotenv !== undefined) fs.writeFileSync(path.join(d, '.env'), dotenv);
    return d;
  }

  it('reads .env from the working folder: the environment wins over it, it wins over the config file, which wins over the defaults', () => {
    const d = workdir('CBP_HTTP_TIMEOUT_MS=2000\nCBP_HTTP_RETRIES=2\n');
    const f = file('layers.yaml', 'httpTimeoutMs: 3000\nhttpRetries: 3\nreportTimeoutMs: 4000\n');
    const cfg = loadConfig({ env: { CBP_HTTP_TIMEOUT_MS: '1000' }, file: f, dotenv: '.env', cwd: d });
    expect(cfg.httpTimeoutMs).toBe(1000); // environment
    expect(cfg.httpRetries).toBe(2); // .env
    expect(cfg.reportTimeoutMs).toBe(4000); // config file
    expect(cfg.webhookPort).toBe(8787); // default
    expect(settingSources(cfg)).toMatchObject({ httpTimeoutMs: 'environment', httpRetries: '.env', reportTimeoutMs: `config file ${f}`, webhookPort: 'default' });
  });

  it('leaves process.env as it is', () => {
    const d = workdir('CBP_HTTP_RETRIES=4\n');
    expect(loadConfig({ env: {}, dotenv: '.env', cwd: d }).httpRetries).toBe(4);
    expect(process.env.CBP_HTTP_RETRIES).toBeUndefined();
  });

  it('is optional: a working folder without one loads the defaults', () => {
    expect(loadConfig({ env: {}, dotenv: '.env', cwd: workdir() }).httpRetries).toBe(5);
  });

  it('finds the config file through CBP_CONFIG written in .env', () => {
    const d = workdir('CBP_CONFIG=cbp.yaml\n');
    fs.writeFileSync(path.join(d, 'cbp.yaml'), 'httpRetries: 1\n');
    expect(loadConfig({ env: {}, dotenv: '.env', cwd: d }).httpRetries).toBe(1);
  });

  it('reads export, comments, quotes, escapes and values spanning lines', () => {
    const text = [
      '# a comment',
      '',
      'export CBP_DATA_USERNAME = merchant-1   # trailing comment',
      "CBP_WEBHOOK_PATH='/hooks #1'",
      'CBP_API_SECRET="a\\"b\\\\c\\nd"',
      'CBP_ALERT_EMAIL_TO="risk@example.test,',
      'ops@example.test"',
      'CBP_ALERT_EMAIL_FROM=`cbp@example.test`',
      'OTHER_TOOL_SETTING=ignored',
    ].join('\r\n');
    const cfg = loadConfig({ env: {}, dotenv: '.env', cwd: workdir(text) });
    expect(cfg).toMatchObject({
      dataUsername: 'merchant-1',
      webhookPath: '/hooks #1',
      apiSecret: 'a"b\\c\nd',
      alertEmailTo: 'risk@example.test,\nops@example.test',
      alertEmailFrom: 'cbp@example.test',
    });
    expect(parseDotenv('A=1\nA=2\n', '.env')).toEqual({ A: '2' });
  });

  it('refuses a malformed line, naming the file and line but never its text', () => {
    const e = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir('CBP_HTTP_RETRIES=2\nCBP_API_SECRET supersecretvalue\n') }));
    expect(e.message).toContain('.env line 2 is not KEY=value');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('refuses a quote that is never closed, and text after a closing quote', () => {
    const open = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir('CBP_API_SECRET="supersecretvalue\nCBP_HTTP_RETRIES=2\n') }));
    expect(open.message).toContain('.env line 1');
    expect(open.message).toContain('never closed');
    expect(open.message).not.toContain('supersecretvalue');
    const after = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir("CBP_WEBHOOK_PATH='/a' b\n") }));
    expect(after.message).toContain('.env line 1');
  });

  it('refuses a CBP_ name it does not know (a typo would silently drop a setting)', () => {
    const e = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir('CBP_DATA_DIRR=/srv\n') }));
    expect(e.message).toContain('unknown setting "CBP_DATA_DIRR" (did you mean CBP_DATA_DIR?)');
  });

  it('suggests the nearest known name for a misspelled .env key, also one without the CBP_ prefix', () => {
    const e = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir('CBP_WEBHOOK_PASWORD=x\nCPB_DATA_DIR=/srv\nTEMPORAL_ADRESS=h:7233\nPATH_EXTRA=1\n') }));
    expect(e.message).toContain('unknown setting "CBP_WEBHOOK_PASWORD" (did you mean CBP_WEBHOOK_PASSWORD?)');
    expect(e.message).toContain('unknown setting "CPB_DATA_DIR" (did you mean CBP_DATA_DIR?)');
    expect(e.message).toContain('unknown setting "TEMPORAL_ADRESS" (did you mean TEMPORAL_ADDRESS?)');
    expect(e.message).not.toContain('PATH_EXTRA');
    const far = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir('CBP_SOMETHING_ELSE_ENTIRELY=1\n') }));
    expect(far.message).toContain('unknown setting "CBP_SOMETHING_ELSE_ENTIRELY" (known: see .env.example)');
  });

  it('refuses an unquoted value starting with # (a comment: the password would be empty), naming the line and how to quote it', () => {
    const secret = '#x9s8d7f6g5h4j3k2';
    for (const line of [`CBP_WEBHOOK_PASSWORD=${secret}`, `CBP_WEBHOOK_PASSWORD= ${secret}`, `export CBP_WEBHOOK_PASSWORD=${secret}  # the receiver's`]) {
      const e = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir(`CBP_HTTP_RETRIES=2\n${line}\n`) }));
      expect(e.message, line).toContain('.env line 2: CBP_WEBHOOK_PASSWORD');
      expect(e.message, line).toContain('CBP_WEBHOOK_PASSWORD="#…"');
      expect(e.message, line).not.toContain('x9s8d7f6g5h4j3k2');
    }
    // Quoted, it is the value; and a trailing comment after a value is still a comment.
    const quoted = loadConfig({ env: {}, dotenv: '.env', cwd: workdir(`CBP_WEBHOOK_PASSWORD="${secret}"\nCBP_WEBHOOK_USERNAME=cbp-hook #x\n`) });
    expect(quoted).toMatchObject({ webhookPassword: secret, webhookUsername: 'cbp-hook' });
    // Another tool's line in a shared .env is not cbp's business.
    expect(parseDotenv('OTHER_TOOL=#x\n', '.env')).toEqual({ OTHER_TOOL: '' });
  });

  it('refuses ${VAR}, $VAR and ~ it would not expand (the store would go to ./${HOME}/cbpdata), naming the line, never the value', () => {
    for (const [line, what] of [
      ['CBP_DATA_DIR=${HOME}/cbpdata', '$ variable'],
      ['CBP_DATA_DIR=$HOME/cbpdata', '$ variable'],
      ['CBP_DATA_DIR="${HOME}/cbpdata"', '$ variable'],
      ['CBP_DATA_DIR=~/cbpdata', 'starts with ~'],
      ['CBP_DATA_PASSWORD=pa$Sw0rd-secret-value', '$ variable'],
    ] as const) {
      const e = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir(`\n${line}\n`) }));
      expect(e.message, line).toContain(`.env line 2: ${line.split('=')[0]}'s value`);
      expect(e.message, line).toContain(what);
      expect(e.message, line).toContain('cbp does not expand variables in .env: write the path or value out in full');
      expect(e.message, line).not.toContain(line.slice(line.indexOf('=') + 1).replace(/"/g, ''));
    }
    // Literal on purpose: single quotes; a $ not followed by a name; a ~ inside a value.
    const cfg = loadConfig({
      env: {},
      dotenv: '.env',
      cwd: workdir("CBP_DATA_PASSWORD='pa$Sw0rd'\nCBP_API_SECRET=abc$$1~x\nCBP_DATA_USERNAME=me~2\n"),
    });
    expect(cfg).toMatchObject({ dataPassword: 'pa$Sw0rd', apiSecret: 'abc$$1~x', dataUsername: 'me~2' });
    expect(parseDotenv('COMPOSE_PROJECT_DIR=${HOME}/x\n', '.env')).toEqual({ COMPOSE_PROJECT_DIR: '${HOME}/x' });
  });

  it('checks what .env sets like any other source, naming it', () => {
    const e = configError(() => loadConfig({ env: {}, dotenv: '.env', cwd: workdir('CBP_WEBHOOK_PORT=eighty\n') }));
    expect(e.message).toContain('CBP_WEBHOOK_PORT (from .env) = "eighty"');
  });
});

describe('transport rules of URL settings', () => {
  const httpsOnly = ['CBP_AUTH_BASE_URL', 'CBP_EVENTS_BASE_URL', 'CBP_DATA_BASE_URL', 'CBP_REPORTING_BASE_URL', 'CBP_WEBHOOK_PUBLIC_URL', 'CBP_ALERT_WEBHOOK_URL', 'CBP_SLACK_WEBHOOK_URL'];

  it('refuses plain http off loopback for every service and notifier URL, naming each setting', () => {
    const e = configError(() => loadConfig({ env: Object.fromEntries(httpsOnly.map((k) => [k, 'http://example.com/v1'])) }));
    expect(e.problems).toHaveLength(httpsOnly.length);
    for (const k of httpsOnly) expect(e.message).toContain(`${k} (from environment) = "http://example.com/`);
    expect(e.problems[0]).toContain('must use https://');
  });

  it('allows plain http on loopback (the sandbox) and https anywhere', () => {
    for (const u of ['http://127.0.0.1:8790/v1', 'http://localhost/v1', 'http://[::1]:80/v1', 'http://127.1.2.3/v1', 'https://example.com/v1']) {
      expect(() => loadConfig({ env: Object.fromEntries(httpsOnly.map((k) => [k, u])) }), u).not.toThrow();
    }
  });

  it('refuses a URL of another scheme', () => {
    expect(configError(() => loadConfig({ env: { CBP_EVENTS_BASE_URL: 'ftp://example.com/v1' } })).message).toContain('CBP_EVENTS_BASE_URL');
  });

  it('takes SMTP over TLS only, off loopback: smtps://, or smtp:// with requireTLS=true', () => {
    for (const ok of ['smtps://u:p@mail.example.com:465', 'smtp://u:p@mail.example.com:587?requireTLS=true', 'smtp://127.0.0.1:2525']) {
      expect(loadConfig({ env: { CBP_SMTP_URL: ok } }).smtpUrl, ok).toBe(ok);
    }
    for (const bad of ['smtp://u:supersecretpw@mail.example.com:25', 'https://mail.example.com', 'mail.example.com:465']) {
      const e = configError(() => loadConfig({ env: { CBP_SMTP_URL: bad } }));
      expect(e.message, bad).toContain('CBP_SMTP_URL');
      expect(e.message).not.toContain('supersecretpw');
    }
    expect(configError(() => loadConfig({ env: { CBP_SMTP_URL: 'smtp://u:supersecretpw@mail.example.com:25' } })).message).toContain(
      '"smtp://u:****@mail.example.com:25": must use TLS off loopback',
    );
  });

  it('shows a refused URL with its host but its password and tokens masked', () => {
    const e = configError(() =>
      loadConfig({ env: { CBP_SLACK_WEBHOOK_URL: 'http://hooks.slack.example/services/T0AAA1111/B0BBB2222/Xsupersecret9', CBP_EVENTS_BASE_URL: 'http://u:supersecretpw@ev.example/v1?token=supersecrettok' } }),
    );
    expect(e.message).toContain('"http://hooks.slack.example/services/****/****/****"');
    expect(e.message).toContain('"http://u:****@ev.example/v1?token=****"');
    expect(e.message).not.toMatch(/supersecret|T0AAA1111/);
  });
});

describe('secrets in configuration messages', () => {
  it('never shows an invalid secret value', () => {
    const e = configError(() => loadConfig({ env: { CBP_SLACK_WEBHOOK_URL: 'hooks-slack-supersecretvalue' } }));
    expect(e.message).toContain('CBP_SLACK_WEBHOOK_URL');
    expect(e.message).toContain('(hidden)');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('never shows a secret from a YAML file that fails to parse', () => {
    const f = file('broken.yaml', 'apiSecret: "supersecretvalue\nother: [1\n');
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.message).toContain('is not valid YAML');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('never shows a secret from a JSON file that fails to parse', () => {
    const f = file('broken.json', '{"apiSecret": supersecretvalue}');
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.message).toContain('is not valid JSON');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('lists the values of secret settings so they can be scrubbed from output', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'supersecretvalue', CBP_DATA_USERNAME: 'merchant' } });
    expect(secretValues(cfg)).toEqual(['supersecretvalue']);
  });

  it('lists the secret parts of URL settings: userinfo, query values, and a secret URL\'s token path', () => {
    const slack = 'https://hooks.slack.com/services/T0123ABCD/B0456EFGH/Xy12abcdefghijklmnopqrst';
    const cfg = loadConfig({
      env: {
        CBP_SLACK_WEBHOOK_URL: slack,
        CBP_SMTP_URL: 'smtps://mailer%40corp:p%40ssw0rd@mail.example.com:465',
        CBP_EVENTS_BASE_URL: 'https://ev.example.com/v1?token=evtoken123&debug=true',
        CBP_ALERT_WEBHOOK_URL: 'https://alertuser:alertpass@alerts.example.com/hook',
      },
    });
    const v = secretValues(cfg);
    expect(v).toEqual(
      expect.arrayContaining([
        slack,
        'services/T0123ABCD/B0456EFGH/Xy12abcdefghijklmnopqrst',
        'T0123ABCD',
        'B0456EFGH',
        'Xy12abcdefghijklmnopqrst',
        'smtps://mailer%40corp:p%40ssw0rd@mail.example.com:465',
        'mailer%40corp',
        'mailer@corp',
        'p%40ssw0rd',
        'p@ssw0rd',
        'evtoken123',
        'alertuser',
        'alertpass',
      ]),
    );
    // Words that say where a token goes, flags and numbers are not secrets: scrubbing them would garble logs.
    // A secret URL's path only when it holds a token: the alert webhook's plain "/hook" would garble every log line.
    for (const plain of ['services', 'true', 'hooks.slack.com', 'https://ev.example.com/v1', 'ev.example.com', 'hook', '/hook']) expect(v).not.toContain(plain);
  });
});

describe('requireSettings', () => {
  it('passes when every needed setting is set', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'x'.repeat(8), CBP_AUTH_BASE_URL: 'https://auth.example/v1' } });
    expect(() => requireSettings(cfg, ['apiSecret', 'authBaseUrl'], 'the token client')).not.toThrow();
  });

  it('names every missing setting at once, each with what it is for', () => {
    const cfg = loadConfig({ env: { CBP_REPORTING_BASE_URL: 'https://rep.example' } });
    const e = configError(() => requireSettings(cfg, ['reportingBaseUrl', 'reportingKey', 'companyToken'], 'cbp fetch'));
    expect(e.problems).toHaveLength(2);
    expect(e.problems[0]).toBe('CBP_REPORTING_KEY is not set; cbp fetch needs it: Reporting interface bearer key');
    expect(e.problems[1]).toBe('CBP_COMPANY_TOKEN is not set; cbp fetch needs it: Company token sent in every reporting request body');
  });

  it('never shows the secrets that are set when others are missing', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'supersecretvalue' } });
    const e = configError(() => requireSettings(cfg, ['apiSecret', 'authBaseUrl'], 'the token client'));
    expect(e.message).toContain('CBP_AUTH_BASE_URL');
    expect(e.message).not.toContain('supersecretvalue');
  });
});

describe('.env.example', () => {
  it('equals envExample() output', () => {
    const text = fs.readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
    expect(text).toBe(envExample());
  });

  it('lists every setting', () => {
    const text = envExample();
    for (const d of SETTINGS) expect(text, d.env).toMatch(new RegExp(`^(# )?${d.env}=`, 'm'));
  });

  it('has a unique environment variable and key per setting', () => {
    expect(new Set(SETTINGS.map((d) => d.env)).size).toBe(SETTINGS.length);
    expect(new Set(SETTINGS.map((d) => d.key)).size).toBe(SETTINGS.length);
  });

  it('writes a default that is itself valid for every setting that has one', () => {
    for (const d of SETTINGS) if (d.default !== undefined) expect(d.schema.safeParse(d.default).success, d.env).toBe(true);
  });
});

describe('the Config type is the settings schema\'s', () => {
  const ROOT = path.resolve(import.meta.dirname, '..');

  it('types each setting by its schema: required when it always has a value, optional otherwise', () => {
    expectTypeOf<Config>().toEqualTypeOf<import('zod').infer<typeof SETTINGS_SCHEMA>>();
    expectTypeOf<Config['windowDays']>().toEqualTypeOf<number>();
    expectTypeOf<Config['journalDir']>().toEqualTypeOf<string>();
    expectTypeOf<Config['webhookBehindTlsProxy']>().toEqualTypeOf<boolean>();
    expectTypeOf<Config['logLevel']>().toEqualTypeOf<'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'>();
    expectTypeOf<Config['apiSecret']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<Config['webhookPort']>().toEqualTypeOf<number>();
    expectTypeOf<Config>().not.toHaveProperty('unknownSetting');
    for (const d of SETTINGS) {
      const always = d.default !== undefined || d.underDataDir !== undefined;
      expect(SETTINGS_SCHEMA.shape[d.key].safeParse(undefined).success, d.env).toBe(!always);
    }
  });

  it('loads a configuration the schema accepts as it is, every setting that has a default set', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'a-secret-value', CBP_WINDOW_DAYS: '3' }, cwd: dir });
    expect(SETTINGS_SCHEMA.strict().parse(cfg)).toEqual(cfg);
    expect(cfg.windowDays).toBe(3);
    for (const d of SETTINGS) if (d.default !== undefined || d.underDataDir !== undefined) expect(cfg[d.key], d.env).toBeDefined();
  });

  it('says a setting is set once requireSettings passed', () => {
    const cfg: Config = loadConfig({ env: { CBP_API_SECRET: 'a-secret-value' } });
    requireSettings(cfg, ['apiSecret'], 'the test');
    expectTypeOf(cfg.apiSecret).toEqualTypeOf<string>();
    expect(cfg.apiSecret.length).toBe(14);
  });

  it('leaves no setting cast at its reader, and no default repeated beside it, in the sources', () => {
    const keys = SETTINGS.map((d) => d.key).join('|');
    // `cfg.windowDays as number`, `(cfg.journalDir as string)`, `num(cfg, 'windowDays', 7)`, `cfg.x ?? 'default'`.
    const cast = new RegExp(`\\.(${keys})\\)? as [A-Za-z]`);
    const byName = new RegExp(`\\(cfg, '(${keys})', `);
    const defaulted = new RegExp(`(cfg|config\\(\\))\\.(${keys}) \\?\\? ['"\\d]`);
    const found: string[] = [];
    const walk = (rel: string): void => {
      for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
        const r = path.join(rel, e.name);
        if (e.isDirectory()) {
          if (!['node_modules', 'dist', 'data', 'test', 'bench', '.git', 'coverage', '.tools'].includes(e.name)) walk(r);
        } else if (r.endsWith('.ts')) {
          fs.readFileSync(path.join(ROOT, r), 'utf8')
            .split('\n')
            .forEach((line, i) => {
              if (cast.test(line) || byName.test(line) || defaulted.test(line)) found.push(`${r}:${i + 1}: ${line.trim()}`);
            });
        }
      }
    };
    walk('');
    expect(found).toEqual([]);
  });
});

describe('CBP_DEFAULT_REGION', () => {
  it('is unset by default, reads any letter case as the region, and refuses a region the rules do not know, listing them', () => {
    expect(loadConfig({ env: {}, cwd: dir }).defaultRegion).toBeUndefined();
    expect(loadConfig({ env: { CBP_DEFAULT_REGION: 'eu' }, cwd: dir }).defaultRegion).toBe('EU');
    expect(loadConfig({ env: { CBP_DEFAULT_REGION: ' CEMEA ' }, cwd: dir }).defaultRegion).toBe('CEMEA');
    const e = configError(() => loadConfig({ env: { CBP_DEFAULT_REGION: 'Europe' }, cwd: dir }));
    expect(e.problems).toEqual(['CBP_DEFAULT_REGION (from environment) = "Europe": must be one of US, CA, EU, AP, LAC, CEMEA, AU (got "EUROPE")']);
  });

  it('is read from a config file too', () => {
    const f = file('region.yaml', 'defaultRegion: LAC\n');
    expect(loadConfig({ env: {}, file: f, cwd: dir }).defaultRegion).toBe('LAC');
  });
});
