-- The service's webhook subscriptions cbp holds as its own (workflows/subscriptions.ts, store/subscriptions.ts).
-- The events interface is shared: the service pushes each event to every active subscription of its type,
-- so another consumer of the merchant's account (a CRM, say) may hold subscriptions of its own. The
-- subscriptions reconcile updates and deletes only one recorded here or one on cbp's current receiver url,
-- never another consumer's. Guids, types and times only: no url, e-mail or credentials.
CREATE TABLE IF NOT EXISTS own_subscriptions (
  guid           VARCHAR PRIMARY KEY,
  event_type     VARCHAR NOT NULL,
  origin         VARCHAR NOT NULL,       -- created (cbp created it) | adopted (listed on cbp's receiver url)
  recorded_at    TIMESTAMP NOT NULL,
  seen_active_at TIMESTAMP,              -- first time cbp saw it active: it passed the service's vetting
  deleted_at     TIMESTAMP               -- when cbp deleted it
);
