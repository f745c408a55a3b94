// The notifiers the configuration asks for: each one only when its settings are present.
import type { Config, SettingKey } from '../../lib/config.ts';
import type { Notifier } from './types.ts';
import { log } from '../../lib/log.ts';
import { createWebhookNotifier, webhookSecrets } from './webhook.ts';
import { createSlackNotifier, slackSecrets } from './slack.ts';
import { createEmailNotifier, smtpSecrets } from './email.ts';
import { loadRules, type RuleSet } from '../../rules/thresholds.ts';

export type { Notifier } from './types.ts';

/** What to set for notices to go anywhere (said wherever cbp finds none configured). */
export const NOTIFIER_SETTINGS = 'CBP_ALERT_WEBHOOK_URL, CBP_SLACK_WEBHOOK_URL, or CBP_SMTP_URL with CBP_ALERT_EMAIL_TO';

/** The warning for notices that reached nobody because no notifier is configured. */
export function nobodyToldWarning(untold: number, lookbackDays = 30): string {
  return `${untold} alert notice${untold === 1 ? '' : 's'} reached nobody: no alert notifier is configured, so nobody will be told. ` +
    `Set ${NOTIFIER_SETTINGS}; the next run then sends the notices of the last ${lookbackDays} days (cbp alerts lists them all).`;
}

type NotifierSetting = Extract<SettingKey, 'alertWebhookUrl' | 'alertWebhookSecret' | 'slackWebhookUrl' | 'smtpUrl' | 'alertEmailTo'>;
const setting = (cfg: Config, k: NotifierSetting): string | undefined => (cfg[k] ? cfg[k] : undefined);

/** The names of the notifiers the configuration asks for, without building them. */
export function configuredNotifiers(cfg: Config): string[] {
  const s = (k: NotifierSetting) => setting(cfg, k);
  return [s('alertWebhookUrl') && 'webhook', s('slackWebhookUrl') && 'slack', s('smtpUrl') && s('alertEmailTo') && 'email'].filter((x): x is string => Boolean(x));
}

/** What the configured notifiers hold that must never be shown, without building them (`cbp alerts`). */
export function notifierSecrets(cfg: Config): string[] {
  const s = (k: NotifierSetting) => setting(cfg, k);
  const webhook = s('alertWebhookUrl');
  const slack = s('slackWebhookUrl');
  const smtp = s('smtpUrl');
  return [
    ...(webhook ? webhookSecrets(webhook, s('alertWebhookSecret')) : []),
    ...(slack ? slackSecrets(slack) : []),
    ...(smtp ? smtpSecrets(smtp) : []),
  ];
}

export function notifiersFromConfig(cfg: Config): Notifier[] {
  const out: Notifier[] = [];
  const s = (k: NotifierSetting) => setting(cfg, k);
  const webhook = s('alertWebhookUrl');
  if (webhook) {
    if (!s('alertWebhookSecret')) log().warn('CBP_ALERT_WEBHOOK_URL is set without CBP_ALERT_WEBHOOK_SECRET: alert webhooks go out unsigned');
    out.push(createWebhookNotifier({ url: webhook, secret: s('alertWebhookSecret') }));
  }
  const slack = s('slackWebhookUrl');
  if (slack) out.push(createSlackNotifier({ url: slack }));
  const smtp = s('smtpUrl');
  const to = s('alertEmailTo');
  if (smtp && to) out.push(createEmailNotifier({ smtpUrl: smtp, from: cfg.alertEmailFrom, to }));
  return out;
}

/**
 * The rules whose thresholds the notices' trend charts draw (the configured thresholds file), or undefined when
 * that file cannot be read: the notices then go without a chart (said in the log), never held back by it.
 */
export function chartRules(cfg: Config, logger: { warn: (msg: string) => void } = log()): RuleSet | undefined {
  try {
    return loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
  } catch (e) {
    logger.warn(`alert notices go without their trend chart: the thresholds could not be read: ${(e as Error).message}`);
    return undefined;
  }
}
