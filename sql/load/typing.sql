-- The typing of a report load (store/load/typing.ts): each macro turns one raw VARCHAR value into its type,
-- or NULL when it cannot, and the staging SELECT (store/load/stage.ts) says why a row is quarantined where
-- one is NULL. Temporary macros, created once per connection by the first load on it: they are never part of the
-- store or its snapshot. Typing that depends on the contract's lists (statuses, card brands, partners) is
-- generated from them in store/load/typing.ts instead.

-- A trimmed value, NULL when empty. trim() copies every value; an ASCII value with no space at either end is
-- already trimmed (trim also strips Unicode spaces, which only a non-ASCII value can hold), so only the rest
-- pay for it.
CREATE OR REPLACE TEMP MACRO load_nz(v) AS
  CASE WHEN NOT starts_with(v, ' ') AND NOT ends_with(v, ' ') AND strlen(v) = length(v) THEN NULLIF(v, '') ELSE NULLIF(trim(v), '') END;

-- Descriptive text kept as received; only an empty string means "not given" (trimming every cell costs too much).
CREATE OR REPLACE TEMP MACRO load_txt(v) AS NULLIF(v, '');

-- A raw value as a quarantine reason shows it.
CREATE OR REPLACE TEMP MACRO load_shown(v) AS coalesce(to_json(v)::VARCHAR, 'nothing');

-- DuckDB's DECIMAL cast accepts exactly the decimal spellings (no thousands separators, no words); a JSON
-- number in exponent form goes through DOUBLE. The second cast runs only where the first gave NULL.
CREATE OR REPLACE TEMP MACRO load_amount(v) AS
  CASE WHEN NOT contains(v, '_') THEN coalesce(TRY_CAST(v AS DECIMAL(18,4)), TRY_CAST(TRY_CAST(v AS DOUBLE) AS DECIMAL(18,4))) END;

-- A whole count; "600.0" too (some CSV writers print every number as a float).
CREATE OR REPLACE TEMP MACRO load_count(v) AS
  CASE WHEN regexp_full_match(load_nz(v), '[0-9]+(\.0+)?') THEN TRY_CAST(TRY_CAST(trim(v) AS DECIMAL(38,1)) AS BIGINT) END;

CREATE OR REPLACE TEMP MACRO load_float(v) AS
  CASE WHEN regexp_full_match(load_nz(v), '-?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?') THEN TRY_CAST(trim(v) AS DOUBLE) END;

-- Both spellings of the spec, a fraction, Z/UTC/an offset, or a bare date (midnight). The usual shapes —
-- YYYY-MM-DD HH:MM:SS (either separator, an optional Z) and YYYY-MM-DD — take DuckDB's plain TIMESTAMP cast,
-- far cheaper than the zone-aware one: no offset fits in them, and LIKE with fixed-width patterns
-- recognises them without copying the value. Anything else (an offset, a fraction, lower-case t/z, padding,
-- or what the plain cast refuses) goes through TIMESTAMPTZ (the session zone is UTC, set by openStore, so the
-- result is UTC wall time). The digit gate keeps DuckDB's special words ('epoch', 'infinity') and signed
-- years out: the contract accepts none of them.
CREATE OR REPLACE TEMP MACRO load_ts_slow(v) AS
  CASE WHEN ascii(trim(v)) BETWEEN 48 AND 57 THEN TRY_CAST(TRY_CAST(upper(trim(v)) AS TIMESTAMPTZ) AS TIMESTAMP) END;

CREATE OR REPLACE TEMP MACRO load_ts(v) AS
  CASE WHEN ascii(v) BETWEEN 48 AND 57 AND (v LIKE '____-__-_____:__:__' OR v LIKE '____-__-__' OR v LIKE '____-__-_____:__:__Z')
   THEN coalesce(TRY_CAST(v AS TIMESTAMP), load_ts_slow(v)) ELSE load_ts_slow(v) END;

-- A three-letter code, upper case. The usual codes are a list lookup; only others pay for the pattern match.
-- list_contains, not IN: DuckDB turns an IN list into a join against the constants.
CREATE OR REPLACE TEMP MACRO load_currency(v) AS
  CASE WHEN list_contains(['USD', 'EUR', 'GBP', 'CAD', 'AUD'], v) THEN v WHEN regexp_full_match(v, '[A-Z]{3}') THEN v
       WHEN length(trim(v)) = 3 AND regexp_full_match(trim(v), '[A-Za-z]{3}') THEN upper(trim(v)) END;

-- A prevention alert's statuses: a JSON array (or its text in a CSV cell), else a ";"-joined list; empty
-- means no statuses; NULL when it is JSON but not an array.
CREATE OR REPLACE TEMP MACRO load_statuses(v) AS
  CASE WHEN load_nz(v) IS NULL THEN []::VARCHAR[]
    WHEN starts_with(trim(v), '[') THEN CASE WHEN json_valid(trim(v)) AND json_type(trim(v)::JSON) = 'ARRAY' THEN from_json(trim(v)::JSON, '["VARCHAR"]') END
    ELSE list_filter(list_transform(string_split(v, ';'), x -> trim(x)), x -> x <> '') END;

-- A MID's gateways: a JSON array, else a ";"-joined list; NULL when not given.
CREATE OR REPLACE TEMP MACRO load_gateways(v) AS
  CASE WHEN load_nz(v) IS NULL THEN NULL
    WHEN starts_with(trim(v), '[') AND json_valid(trim(v)) THEN from_json(trim(v)::JSON, '["VARCHAR"]')
    ELSE list_filter(list_transform(string_split(v, ';'), x -> trim(x)), x -> x <> '') END;
