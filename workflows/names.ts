// Workflow type names as clients and schedules start them (the exports of workflows/temporal.ts). Kept apart
// so code outside the workflow sandbox never imports the bindings themselves.
export const WORKFLOW_TYPES = {
  nightly: 'nightlyWorkflow',
  backfill: 'backfillWorkflow',
  ingestEvents: 'ingestEventsWorkflow',
  reconcileSubscriptions: 'reconcileSubscriptionsWorkflow',
  pushOrders: 'pushOrdersWorkflow',
  maintainStore: 'maintainStoreWorkflow',
  sendDigest: 'sendDigestWorkflow',
} as const;
