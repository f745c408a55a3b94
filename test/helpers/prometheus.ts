// Debian's `prometheus` package for the metrics suite (test/prometheus.test.ts): the server and promtool. Skipped
// where they are missing, unless CBP_REQUIRE_PROMETHEUS=1 (CI, whose .ci/run installs them), where that fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../lib/free-port.ts';

function onPath(name: string): string | undefined {
  return [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin'].map((d) => path.join(d, name)).find((f) => existsSync(f));
}

export const prometheusBin = onPath('prometheus');
export const promtoolBin = onPath('promtool');
export const prometheusAvailable = prometheusBin !== undefined && promtoolBin !== undefined;
export const prometheusRequired = process.env.CBP_REQUIRE_PROMETHEUS === '1';
export const skipPrometheus = !prometheusAvailable && !prometheusRequired;
export const HOW_TO_GET_PROMETHEUS = "apt-get install prometheus (Debian's package: prometheus and promtool), as .ci/run does";

export function prometheusTitle(what: string): string {
  if (prometheusAvailable) return `${what} (${prometheusBin})`;
  return prometheusRequired ? `${what} (CBP_REQUIRE_PROMETHEUS=1, and no prometheus/promtool was found)` : `${what} (skipped: no prometheus/promtool; ${HOW_TO_GET_PROMETHEUS})`;
}

export interface RunningPrometheus {
  url: string;
  /** One instant query's first value, or undefined when it has none yet. */
  value(query: string): Promise<number | undefined>;
  stop(): Promise<void>;
}

/** Bounded polling: calls `read` until `ok` holds of its value, at most `tries` times; returns the last value. */
export async function pollUntil<T>(read: () => Promise<T>, ok: (v: T) => boolean, tries = 240, everyMs = 250): Promise<T> {
  let v = await read();
  for (let i = 1; i < tries && !ok(v); i++) {
    await new Promise((r) => setTimeout(r, everyMs));
    v = await read();
  }
  return v;
}

/**
 * A Prometheus server of its own on a loopback port: a temp config scraping `targets` (job name → host:port) every
 * second, its data in `dir`. Resolves once /-/ready answers.
 */
export async function startPrometheus(dir: string, targets: Record<string, string>): Promise<RunningPrometheus> {
  if (!prometheusBin) throw new Error(`CBP_REQUIRE_PROMETHEUS=1 but there is no prometheus here: ${HOW_TO_GET_PROMETHEUS}`);
  const scrapes = Object.entries(targets).map(([job, at]) => `  - job_name: ${job}\n    static_configs:\n      - targets: ['${at}']`);
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(config, `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${scrapes.join('\n')}\n`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    prometheusBin,
    [`--config.file=${config}`, `--storage.tsdb.path=${path.join(dir, 'tsdb')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const ready = await pollUntil(
    () => fetch(`${url}/-/ready`).then((r) => r.ok, () => false),
    (ok) => ok || child.exitCode !== null,
    400,
  );
  if (!ready) {
    await stop();
    throw new Error(`prometheus did not become ready: ${stderr}`);
  }
  return {
    url,
    async value(query) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(query)}`);
      const body = (await res.json()) as { status: string; data?: { result: Array<{ value: [number, string] }> } };
      const first = body.data?.result[0];
      return first ? Number(first.value[1]) : undefined;
    },
    stop,
  };
}
