// Reading DuckDB's results into JS values (store/db.ts): rows as plain objects, and a chunk's column straight from its
// memory where its type allows.
import os from 'node:os';
import { createRequire } from 'node:module';
import { DuckDBEnumType, DuckDBTypeId, JsonDuckDBValueConverter, type DuckDBDataChunk, type DuckDBMaterializedResult, type DuckDBType } from '@duckdb/node-api';
import type { Row } from './db.ts';

/**
 * A result's rows as objects keyed by column name (a name repeated gets ":1", ":2"... as DuckDB's reader names it),
 * values as its getRowObjectsJson gives them. Each object is made from one object literal for the result's columns,
 * so that its properties are fast ones: the reader adds them one by one, which for wide rows leaves objects in
 * dictionary mode, which takes far more memory a row. The values are read a chunk and a column at a time. (The result is materialized, not streamed: a streamed
 * result is cut short by any other query on the connection meanwhile, and callers run several at once.)
 */
export function rowObjects(result: DuckDBMaterializedResult): Row[] {
  const names = result.deduplicatedColumnNames();
  // JSON.stringify makes any name a string literal: nothing in it runs. "__proto__" as a computed key defines an own
  // property (as a literal key it would set the prototype).
  const key = (n: string) => (n === '__proto__' ? `[${JSON.stringify(n)}]` : JSON.stringify(n));
  const make = new Function('c', 'i', `return {${names.map((n, j) => `${key(n)}: c[${j}][i]`).join(', ')}};`) as (c: unknown[][], i: number) => Row;
  const types = result.columnTypes();
  const out: Row[] = [];
  // One string per distinct text of a column, shared by its rows (a network, a month, a state): the text the converter
  // made for each row is garbage at once instead of held. A mart_ratios row holds 513 bytes so, against 835 with a
  // string of its own in each text column. A column with more than INTERN_MAX distinct texts keeps its rows' own from
  // then on.
  const interned = types.map(() => new Map<string, string>());
  for (let k = 0; k < result.chunkCount; k++) {
    const chunk = result.getChunk(k);
    const n = chunk.rowCount;
    // Numbers, booleans and ENUMs straight from the column's memory (fastColumn; a non-finite DOUBLE as its text, as the
    // JSON converter gives it), any other type through the converter.
    const cols = types.map((type, j) => {
      const fast = fastColumn(chunk, j, type, n);
      if (!fast) return intern(chunk.convertColumnValues(j, JsonDuckDBValueConverter), interned[j]);
      if (type.typeId === DuckDBTypeId.DOUBLE || type.typeId === DuckDBTypeId.FLOAT) {
        for (let i = 0; i < n; i++) if (typeof fast[i] === 'number' && !Number.isFinite(fast[i])) fast[i] = String(fast[i]);
      }
      return fast;
    });
    for (let i = 0; i < n; i++) out.push(make(cols, i));
  }
  return out;
}

const INTERN_MAX = 4096;

/** The column's texts replaced by the map's string of the same text (added while the map holds under INTERN_MAX). */
function intern(values: unknown[], seen: Map<string, string>): unknown[] {
  if (seen.size >= INTERN_MAX) return values;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'string') continue;
    const s = seen.get(v);
    if (s !== undefined) values[i] = s;
    else if (seen.size < INTERN_MAX) seen.set(v, v);
  }
  return values;
}

/**
 * DuckDB's C API as @duckdb/node-api itself loads it (its own dependency, resolved from it): the chunks and vectors it
 * hands out are that module's, to be read with that module alone.
 */
const duckdb = createRequire(createRequire(import.meta.url).resolve('@duckdb/node-api'))('@duckdb/node-bindings') as typeof import('@duckdb/node-bindings');

/** Typed arrays of a fixed-width column's memory, by the column's type (or an ENUM's internal type). */
const FIXED: Partial<Record<DuckDBTypeId, { new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayLike<number>; BYTES_PER_ELEMENT: number }>> = {
  [DuckDBTypeId.DOUBLE]: Float64Array, [DuckDBTypeId.FLOAT]: Float32Array, [DuckDBTypeId.INTEGER]: Int32Array, [DuckDBTypeId.SMALLINT]: Int16Array,
  [DuckDBTypeId.TINYINT]: Int8Array, [DuckDBTypeId.UINTEGER]: Uint32Array, [DuckDBTypeId.USMALLINT]: Uint16Array, [DuckDBTypeId.UTINYINT]: Uint8Array,
  [DuckDBTypeId.BOOLEAN]: Uint8Array,
};

/**
 * A chunk's column as a list of the values its vector's getItem gives (a number for the numeric types up to INTEGER and
 * DOUBLE, a boolean, an ENUM's text; null where NULL), read straight from the column's memory and validity mask
 * through DuckDB's C API (@duckdb/node-bindings, which @duckdb/node-api reads through too); undefined for any other type,
 * to be read with getItem. getItem is slow a value over a chunk of mixed columns (its validity test makes BigInts);
 * this is not.
 */
export function fastColumn(chunk: DuckDBDataChunk, index: number, type: DuckDBType, n: number): unknown[] | undefined {
  const enumValues = type instanceof DuckDBEnumType ? type.values : null;
  const array = FIXED[enumValues ? (type as DuckDBEnumType).internalTypeId : type.typeId];
  if (!array || !LITTLE_ENDIAN) return undefined;
  const vector = duckdb.data_chunk_get_vector(chunk.chunk, index);
  const data = duckdb.vector_get_data(vector, n * array.BYTES_PER_ELEMENT);
  const items = new array(data.buffer, data.byteOffset, n);
  // The validity mask: a bit a row, 64 a word (little-endian: row i is bit i % 8 of byte i / 8); none when all valid.
  const mask = duckdb.vector_get_validity(vector, Math.ceil(n / 64) * 8) as Uint8Array | null;
  const out: unknown[] = new Array(n);
  const bool = type.typeId === DuckDBTypeId.BOOLEAN;
  for (let i = 0; i < n; i++) {
    if (mask && mask.length && !((mask[i >> 3] >> (i & 7)) & 1)) out[i] = null;
    else out[i] = enumValues ? enumValues[items[i]] : bool ? items[i] !== 0 : items[i];
  }
  return out;
}

const LITTLE_ENDIAN = os.endianness() === 'LE';

/**
 * Frees a fetched chunk's data now (its texts included): DuckDB frees it only when the JS object holding it is
 * collected, and V8 does not see that memory, so it collects late. The chunk is empty after.
 */
export function releaseChunk(chunk: DuckDBDataChunk): void {
  duckdb.data_chunk_reset(chunk.chunk);
}
