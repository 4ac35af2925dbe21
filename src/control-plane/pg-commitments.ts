import type { Pool } from "pg";
import type { Clock } from "../stores/checks.js";
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
} from "../stores/global/commitment-rows.js";
import { COMMITMENT_SQL } from "../stores/global/commitment-sql.js";
import type { ControlPlaneCommitments } from "./control-plane.js";
import { pgStatements, query } from "./pg-statements.js";

// Every write is one statement: an upsert or a status change takes the row's lock for itself, so
// racing hosts apply one after another and each row stays one host's whole write.
const SQL = pgStatements("commitments", {
  ...COMMITMENT_SQL,
  delete: `${COMMITMENT_SQL.delete} RETURNING 1 AS gone`,
});

/** Commitments on PostgreSQL: `CommitmentStore`'s statements and checks. */
export class PgCommitments implements ControlPlaneCommitments {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  async upsert(commitment: NewCommitment): Promise<Commitment> {
    const values = upsertValues(commitment, this.clock);
    const [row] = await query<CommitmentRow>(this.pool, SQL.upsert, values);
    return fromRow(row as CommitmentRow);
  }

  async get(id: string): Promise<Commitment | undefined> {
    const [row] = await query<CommitmentRow>(this.pool, SQL.select, { id: checkCommitmentId(id) });
    return row ? fromRow(row) : undefined;
  }

  async setStatus(id: string, status: CommitmentStatus): Promise<Commitment> {
    const params = setStatusParams(id, status, this.clock);
    const [row] = await query<CommitmentRow>(this.pool, SQL.setStatus, params);
    if (!row) throw noCommitment(params.id);
    return fromRow(row);
  }

  async delete(id: string): Promise<boolean> {
    const rows = await query(this.pool, SQL.delete, { id: checkCommitmentId(id) });
    return rows.length > 0;
  }

  async listDue(now: number = this.clock(), options: { limit?: number } = {}) {
    const params = dueParams(now, options);
    return (await query<CommitmentRow>(this.pool, SQL.due, params)).map(fromRow);
  }

  async listBySession(agentId: string, sessionKey: string, options: { limit?: number } = {}) {
    const params = bySessionParams(agentId, sessionKey, options);
    return (await query<CommitmentRow>(this.pool, SQL.bySession, params)).map(fromRow);
  }
}
