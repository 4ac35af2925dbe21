import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { type Clock, checkOptions } from "../checks.js";
import {
  bySessionParams,
  type Commitment,
  type CommitmentRow,
  type CommitmentStatus,
  checkCommitmentId,
  dueParams,
  fromRow,
  type NewCommitment,
  noCommitment,
  setStatusParams,
  upsertValues,
} from "./commitment-rows.js";
import { COMMITMENT_SQL } from "./commitment-sql.js";

export {
  COMMITMENT_COLUMNS,
  COMMITMENT_STATUSES,
  type Commitment,
  type CommitmentStatus,
  type NewCommitment,
} from "./commitment-rows.js";

/** Commitments (`commitments`): upsert by id, change status, and list what is due. */
export class CommitmentStore {
  private readonly clock: Clock;
  private readonly upsertRow: SqlStatement<CommitmentRow>;
  private readonly selectOne: SqlStatement<CommitmentRow>;
  private readonly setStatusRow: SqlStatement<CommitmentRow>;
  private readonly deleteOne: SqlStatement;
  private readonly due: SqlStatement<CommitmentRow>;
  private readonly byScope: SqlStatement<CommitmentRow>;

  constructor(db: Database, options: { clock?: Clock } = {}) {
    this.clock = checkOptions(options, ["clock"], "CommitmentStore").clock ?? Date.now;
    this.upsertRow = db.prepare(COMMITMENT_SQL.upsert);
    this.selectOne = db.prepare(COMMITMENT_SQL.select);
    this.setStatusRow = db.prepare(COMMITMENT_SQL.setStatus);
    this.deleteOne = db.prepare(COMMITMENT_SQL.delete);
    this.due = db.prepare(COMMITMENT_SQL.due);
    this.byScope = db.prepare(COMMITMENT_SQL.bySession);
  }

  upsert(commitment: NewCommitment): Commitment {
    return fromRow(this.upsertRow.get(upsertValues(commitment, this.clock)) as CommitmentRow);
  }

  get(id: string): Commitment | undefined {
    const row = this.selectOne.get({ id: checkCommitmentId(id) });
    return row ? fromRow(row) : undefined;
  }

  setStatus(id: string, status: CommitmentStatus): Commitment {
    const params = setStatusParams(id, status, this.clock);
    const row = this.setStatusRow.get(params);
    if (!row) throw noCommitment(params.id);
    return fromRow(row);
  }

  delete(id: string): boolean {
    return this.deleteOne.run({ id: checkCommitmentId(id) }).changes > 0;
  }

  /** Pending commitments whose window has opened by `now`, earliest first. */
  listDue(now: number = this.clock(), options: { limit?: number } = {}): Commitment[] {
    return this.due.all(dueParams(now, options)).map(fromRow);
  }

  /** Every commitment of one agent session, earliest due first. */
  listBySession(
    agentId: string,
    sessionKey: string,
    options: { limit?: number } = {},
  ): Commitment[] {
    return this.byScope.all(bySessionParams(agentId, sessionKey, options)).map(fromRow);
  }
}
