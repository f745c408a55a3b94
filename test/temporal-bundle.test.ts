import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { afterAll, describe, expect, it } from 'vitest';
import { WORKFLOWS_PATH } from '../worker/worker.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } as never;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('workflow bundle', () => {
  it('builds workflows/temporal.ts offline: the bindings import nothing non-deterministic', async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet });
    expect(bundle.code.length).toBeGreaterThan(1000);
    for (const name of Object.values(WORKFLOW_TYPES)) expect(bundle.code).toContain(name);
    // The bodies are plain code: no file system, no DuckDB, no HTTP client.
    expect(bundle.code).not.toMatch(/node_modules\/(@duckdb|undici|pino)\/|require\("(node:)?fs"\)/);
  });

  it('rejects workflow code that imports fs (the check above means something)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
    dirs.push(dir);
    // The SDK must resolve from the fixture's folder: lend it the project's modules.
    fs.symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
    const file = path.join(dir, 'bad-workflow.ts');
    fs.writeFileSync(file, "import fs from 'fs';\nexport async function bad(): Promise<string> { return fs.readFileSync('/etc/hostname', 'utf8'); }\n");
    await expect(bundleWorkflowCode({ workflowsPath: file, logger: quiet })).rejects.toThrow(/disallowed modules[\s\S]*'fs'/);
  });
});
