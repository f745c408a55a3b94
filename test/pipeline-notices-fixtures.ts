// Shared by the pipeline notice tests: the real activities over a temp store, with a notifier that keeps what it is sent.
import path from 'node:path';
import { createActivities } from '../activities/index.ts';
import type { Activities } from '../activities/types.ts';
import type { ServiceClients } from '../client/index.ts';
import { loadConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import type { Notice } from '../store/alerts.ts';
import type { Notifier } from '../alerts/notifiers/types.ts';
import { tempStore } from './ratios-fixtures.ts';

/** A notifier that keeps what it is sent. */
export function keepingNotifier(): Notifier & { sent: Notice[] } {
  const sent: Notice[] = [];
  return { name: 'keep', sent, async send(n) { sent.push(n); } };
}

/** The real activities over a temp store, with a keeping notifier and one activity replaced. */
export async function notifyingActivities(patch: (a: Activities) => Partial<Activities>) {
  const { store, dir } = await tempStore();
  const config = loadConfig({ env: { CBP_LOG_LEVEL: 'silent', CBP_DATA_DIR: dir, CBP_ALERT_WEBHOOK_URL: 'http://127.0.0.1:9/hook' } });
  const notifier = keepingNotifier();
  const base = createActivities({ config, store, clients: {} as ServiceClients, notifiers: [notifier], logger: createLogger({ level: 'silent' }), journalDir: path.join(dir, 'journal') });
  return { store, dir, notifier, activities: { ...base, ...patch(base) } as Activities };
}

