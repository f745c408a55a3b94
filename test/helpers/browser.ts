// A real headless Chromium for the tests that look at a page as a person would: Debian's chromium package
// (/usr/bin/chromium, installed by .ci/run) driven by playwright-core, which downloads no browser of its own.
// Without the browser those tests skip and say why; with CBP_REQUIRE_BROWSER=1 (set by .ci/run) they fail.
import fs from 'node:fs';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { tempDir } from './tmp.ts';

export const CHROMIUM = process.env.CBP_CHROMIUM ?? '/usr/bin/chromium';

/** Why there is no browser to test with, or null when there is one. */
export function browserMissing(): string | null {
  if (!fs.existsSync(CHROMIUM)) {
    return `no Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium, as .ci/run does) or set CBP_CHROMIUM`;
  }
  return null;
}

/** The browser must be there: CI sets CBP_REQUIRE_BROWSER=1 so a missing browser fails instead of skipping. */
export const browserRequired = () => process.env.CBP_REQUIRE_BROWSER === '1';

export async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  // The browser's own temp files (shared memory, crash reports) go to a folder of the test's, removed after it.
  const tmp = tempDir('cbp-chromium-');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--font-render-hinting=none'],
    env: { ...process.env, TMPDIR: tmp, HOME: tmp, XDG_CONFIG_HOME: tmp, XDG_CACHE_HOME: tmp },
  });
}

/** Every request a page made, and the ones that were refused because they were not the page itself. */
export interface RequestLog {
  all: string[];
  refused: string[];
}

/**
 * A page that may load exactly one URL (the file under test) and nothing else: every other request, of any
 * kind (script, style, image, font, fetch, beacon, prefetch), is aborted and recorded. JavaScript off unless
 * asked for.
 */
export async function isolatedPage(browser: Browser, allowed: string, opts: { javaScript?: boolean; width?: number; height?: number } = {}): Promise<{ context: BrowserContext; page: Page; requests: RequestLog }> {
  const context = await browser.newContext({
    javaScriptEnabled: opts.javaScript ?? false,
    viewport: { width: opts.width ?? 1280, height: opts.height ?? 900 },
    deviceScaleFactor: 1,
    serviceWorkers: 'block',
    offline: true,
  });
  const requests: RequestLog = { all: [], refused: [] };
  const seen = (r: Request) => requests.all.push(r.url());
  context.on('request', seen);
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    if (url === allowed) return route.continue();
    requests.refused.push(url);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  return { context, page, requests };
}
