// The digest activity (issue #28): the at-risk rows, the cases due soon and two trend charts read from the store and
// sent as one e-mail (alerts/digest.ts), on the `digest` schedule or `cbp run digest`.
import { buildDigest, digestMailOptions, sendDigest } from '../alerts/digest.ts';
import { loadRules, type RuleSet } from '../rules/thresholds.ts';
import type { ActivityContext } from './deps.ts';
import type { PipelineActivities } from './types.ts';

export function createDigestActivities(ctx: ActivityContext): Pick<PipelineActivities, 'sendDigest'> {
  let rules: RuleSet | undefined = ctx.deps.rules;
  return {
    async sendDigest() {
      // Refused (not retried) before anything is read when no e-mail is configured.
      const mail = digestMailOptions(ctx.config);
      rules ??= loadRules(ctx.config.thresholdsFile, { defaultRegion: ctx.config.defaultRegion });
      const set = rules;
      const d = await ctx.withStore('sendDigest', (store) => buildDigest(store, set, { now: ctx.now(), dueWithin: ctx.config.digestDueDays }));
      return sendDigest(d, mail);
    },
  };
}
