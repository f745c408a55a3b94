-- The representment cases a `due` notice was raised for (alerts/due.ts): the notice itself is a row of alerts
-- (kind 'due', program 'representment', level due_soon or overdue), delivered through alert_outbox as every
-- notice is; this table names its case, which the alerts table has no column for. One row per notice, never deleted.
CREATE TABLE IF NOT EXISTS due_notices (
  notice_id VARCHAR PRIMARY KEY,
  mid VARCHAR NOT NULL,
  case_number VARCHAR NOT NULL,
  due_date DATE NOT NULL,
  days_left INTEGER NOT NULL,        -- on the day the notice was raised (the service's day); negative: overdue
  created_at TIMESTAMP NOT NULL
);
