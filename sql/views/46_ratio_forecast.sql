-- What the chance of a breach reads (store/forecast.ts, rules/forecast.ts): each series' numerator by day, as the
-- monthly rows count it (ratio_numerator), grouped MIDs summed as their group's.
CREATE OR REPLACE MACRO ratio_daily_between(first_day, last_day) AS TABLE
WITH cb AS (
  SELECT c.mid, c.card_type AS network, c.date_received::DATE AS day,
    count(*) AS chargebacks,
    count(*) FILTER (WHERE c.is_fraud) AS fraud,
    count(*) FILTER (WHERE NOT c.rdr_resolved) AS vamp_disputes
  FROM int_chargebacks__counted c
  WHERE c.card_type IS NOT NULL AND c.date_received >= first_day::TIMESTAMP AND c.date_received < (last_day + 1)::TIMESTAMP
  GROUP BY ALL
), tc AS (
  SELECT mid, 'visa' AS network, prevention_timestamp::DATE AS day, count(*) AS tc40
  FROM int_tc40__reports
  WHERE mid IS NOT NULL AND prevention_timestamp >= first_day::TIMESTAMP AND prevention_timestamp < (last_day + 1)::TIMESTAMP
  GROUP BY ALL
), d AS (
  SELECT coalesce(cb.mid, tc.mid) AS mid, coalesce(cb.network, tc.network) AS network, coalesce(cb.day, tc.day) AS day,
    coalesce(cb.chargebacks, 0) AS chargebacks, coalesce(cb.fraud, 0) AS fraud, coalesce(cb.vamp_disputes, 0) AS vamp_disputes,
    coalesce(tc.tc40, 0) AS tc40
  FROM cb FULL JOIN tc ON cb.mid = tc.mid AND cb.network = tc.network AND cb.day = tc.day
)
SELECT coalesce(g.group_id, d.mid) AS mid, d.network, p.program, d.day,
  sum(ratio_numerator(p.program, d.chargebacks, d.fraud, d.tc40, d.vamp_disputes))::DOUBLE AS n
FROM d
JOIN (SELECT DISTINCT network, program FROM ratio_programs) p ON p.network IS NULL OR p.network = d.network
LEFT JOIN ratio_rule_groups g ON g.mid = d.mid AND g.program = p.program
GROUP BY ALL;
