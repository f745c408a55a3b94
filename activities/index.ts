// The real activities, one factory per group (as the Temporal samples' createActivities(deps) does), joined
// here into the object the workflows call (activities/types.ts). The same object serves the local runner
// (called directly) and the Temporal worker (wrapped by worker/activity-errors.ts). The groups share one
// context: the dependencies with their defaults, and the one store lock of this set of activities
// (activities/deps.ts says why there is one).
import { activityContext, type ActivityDeps } from './deps.ts';
import { createAlertActivities } from './alerts.ts';
import { createEventActivities } from './events.ts';
import { createDigestActivities } from './digest.ts';
import { createOrderActivities } from './orders.ts';
import { createReportActivities } from './reports.ts';
import { createRunActivities } from './runs.ts';
import { withFailureFlag, withPipelineNotices } from './pipeline-notices.ts';
import { createSubscriptionActivities } from './subscriptions.ts';
import type { Activities } from './types.ts';

export { ActivityStoreError, sharedStore, storeOpener, type ActivityDeps } from './deps.ts';
export { subscriptionView } from './subscriptions.ts';
export { readOrderBatch, orderFileFormat } from './orders-file.ts';

export function createActivities(deps: ActivityDeps): Activities {
  const ctx = activityContext(deps);
  const alerts = createAlertActivities(ctx);
  const runs = createRunActivities(ctx);
  const events = createEventActivities(ctx);
  return {
    ...createReportActivities(ctx),
    ...events,
    ingestEvents: withFailureFlag(ctx, events.ingestEvents),
    ...alerts,
    ...runs,
    // A run that failed for good, and the next success, are notices too.
    recordRun: withPipelineNotices(ctx, { recordRun: runs.recordRun, deliverNotices: alerts.deliverNotices }),
    ...createSubscriptionActivities(ctx),
    ...createOrderActivities(ctx),
    ...createDigestActivities(ctx),
  };
}
