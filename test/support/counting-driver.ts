import type { DriverFactory, SqlDriver, SqlParams, SqlStatement } from "../../src/db/driver.js";
import { chooseDriver, driverFactory } from "../../src/db/driver-choice.js";

/** One executed statement: its SQL and the rows it handed back. */
export interface Execution {
  sql: string;
  rows: number;
}

/**
 * A driver that records every statement executed through it (not merely prepared) and the rows
 * each returned, so a test can assert what a read touched. `reset()` forgets what came before.
 */
export function countingDriver(): {
  factory: DriverFactory;
  executions: Execution[];
  reset(): void;
} {
  const executions: Execution[] = [];
  const record = (sql: string, rows: number) => executions.push({ sql, rows });
  const wrapStatement = <Row>(sql: string, inner: SqlStatement<Row>): SqlStatement<Row> => ({
    run: (...params: SqlParams) => {
      record(sql, 0);
      return inner.run(...params);
    },
    get: (...params: SqlParams) => {
      const row = inner.get(...params);
      record(sql, row === undefined ? 0 : 1);
      return row;
    },
    all: (...params: SqlParams) => {
      const rows = inner.all(...params);
      record(sql, rows.length);
      return rows;
    },
    *iterate(...params: SqlParams) {
      const entry = { sql, rows: 0 };
      executions.push(entry);
      for (const row of inner.iterate(...params)) {
        entry.rows++;
        yield row;
      }
    },
  });
  const factory: DriverFactory = (path, options) => {
    const inner = driverFactory(chooseDriver())(path, options);
    const driver: SqlDriver = {
      name: inner.name,
      path: inner.path,
      get inTransaction() {
        return inner.inTransaction;
      },
      get open() {
        return inner.open;
      },
      prepare: <Row>(sql: string) => wrapStatement(sql, inner.prepare<Row>(sql)),
      exec: (sql: string) => {
        record(sql, 0);
        inner.exec(sql);
      },
      close: () => inner.close(),
    };
    return driver;
  };
  return { factory, executions, reset: () => executions.splice(0) };
}
