/**
 * `table[name]` when `name` is the table's own key, else undefined. A plain object also answers
 * what every object inherits (`constructor`, `toString`, `__proto__`): a table of allowed names
 * read with a name someone else wrote is read through this, or is a `Map`.
 */
export function own<V>(table: Readonly<Record<string, V>>, name: string): V | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}
