import { columnsOf } from "../../db/columns.js";
import type { Database } from "../../db/database.js";
import type { SqlStatement } from "../../db/driver.js";
import { StateError } from "../../db/errors.js";
import {
  type Clock,
  checkLimit,
  checkOptions,
  checkStored,
  checkText,
  checkTime,
  decodeJson,
  encodeRecord,
} from "../checks.js";
import type { JsonValue } from "../json.js";
import { checkStatus } from "./task-states.js";

export const COMMITMENT_STATUSES = ["pending", "snoozed", "sent", "dismissed", "expired"] as const;
export type CommitmentStatus = (typeof COMMITMENT_STATUSES)[number];

interface CommitmentRow {
  id: string;
  agent_id: string;
  session_key: string;
  channel: string;
  status: string;
  due_earliest_at: number;
  due_latest_at: number;
  updated_at: number;
  record_json: string;
}

export const COMMITMENT_COLUMNS = columnsOf<CommitmentRow>()(
  "id",
  "agent_id",
  "session_key",
  "channel",
  "status",
  "due_earliest_at",
  "due_latest_at",
  "updated_at",
  "record_json",
);

/** Something an agent said it would do later ("I'll remind you on Friday"), due in a window. */
export interface Commitment {
  id: string;
  agentId: string;
  sessionKey: string;
  channel: string;
  status: CommitmentStatus;
  dueEarliestAt: number;
  dueLatestAt: number;
  updatedAt: number;
  /** The rest (kind, text, recipient, attempts …), verbatim. */
  record: { [key: string]: JsonValue };
}

export interface NewCommitment {
  id: string;
  agentId: string;
  sessionKey: string;
  channel: string;
  /** Default `pending`. */
  status?: CommitmentStatus;
  dueEarliestAt: number;
  dueLatestAt: number;
  record?: { [key: string]: JsonValue };
}

const KEYS = [
  "id",
  "agentId",
  "sessionKey",
  "channel",
  "status",
  "dueEarliestAt",
  "dueLatestAt",
  "record",
];

function fromRow(row: CommitmentRow): Commitment {
  return {
    id: row.id,
    agentId: row.agent_id,
    sessionKey: row.session_key,
    channel: row.channel,
    status: checkStored(`commitment ${row.id} status`, row.status, COMMITMENT_STATUSES),
    dueEarliestAt: row.due_earliest_at,
    dueLatestAt: row.due_latest_at,
    updatedAt: row.updated_at,
    record: decodeJson(`commitment ${row.id}`, row.record_json),
  };
}

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
    const columns = COMMITMENT_COLUMNS;
    this.upsertRow = db.prepare(
      `INSERT INTO commitments (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})
       ON CONFLICT DO UPDATE SET ${columns
         .slice(1)
         .map((c) => `${c} = excluded.${c}`)
         .join(", ")}
       RETURNING *`,
    );
    this.selectOne = db.prepare("SELECT * FROM commitments WHERE id = ?");
    this.setStatusRow = db.prepare(
      "UPDATE commitments SET status = @status, updated_at = @now WHERE id = @id RETURNING *",
    );
    this.deleteOne = db.prepare("DELETE FROM commitments WHERE id = ?");
    this.due = db.prepare(
      `SELECT * FROM commitments WHERE status = 'pending' AND due_earliest_at <= ?
       ORDER BY due_earliest_at, id LIMIT ?`,
    );
    this.byScope = db.prepare(
      `SELECT * FROM commitments WHERE agent_id = ? AND session_key = ?
       ORDER BY due_earliest_at, id LIMIT ?`,
    );
  }

  upsert(commitment: NewCommitment): Commitment {
    const c = checkOptions(commitment, KEYS, "CommitmentStore.upsert");
    const earliest = checkTime("dueEarliestAt", c.dueEarliestAt);
    const latest = checkTime("dueLatestAt", c.dueLatestAt);
    if (latest < earliest) {
      throw new StateError(
        "E_INVALID_ARGUMENT",
        `commitment ${String(c.id)}: dueLatestAt is before dueEarliestAt`,
      );
    }
    const id = checkText("commitment id", c.id, 256);
    const row = this.upsertRow.get({
      id,
      agent_id: checkText("agentId", c.agentId, 256),
      session_key: checkText("sessionKey", c.sessionKey),
      channel: checkText("channel", c.channel, 256),
      status: checkStatus("commitment status", c.status ?? "pending", COMMITMENT_STATUSES),
      due_earliest_at: earliest,
      due_latest_at: latest,
      updated_at: this.clock(),
      record_json: encodeRecord(`commitment ${id}`, c.record ?? {}, 64 * 1024),
    });
    return fromRow(row as CommitmentRow);
  }

  get(id: string): Commitment | undefined {
    const row = this.selectOne.get(checkText("commitment id", id, 256));
    return row ? fromRow(row) : undefined;
  }

  setStatus(id: string, status: CommitmentStatus): Commitment {
    const checkedId = checkText("commitment id", id, 256);
    const row = this.setStatusRow.get({
      id: checkedId,
      status: checkStatus("commitment status", status, COMMITMENT_STATUSES),
      now: this.clock(),
    });
    if (!row)
      throw new StateError("E_NOT_FOUND", `no commitment ${checkedId}`, {
        details: { id: checkedId },
      });
    return fromRow(row);
  }

  delete(id: string): boolean {
    return this.deleteOne.run(checkText("commitment id", id, 256)).changes > 0;
  }

  /** Pending commitments whose window has opened by `now`, earliest first. */
  listDue(now: number = this.clock(), options: { limit?: number } = {}): Commitment[] {
    const { limit } = checkOptions(options, ["limit"], "CommitmentStore.listDue");
    return this.due.all(checkTime("now", now), checkLimit(limit)).map(fromRow);
  }

  /** Every commitment of one agent session, earliest due first. */
  listBySession(
    agentId: string,
    sessionKey: string,
    options: { limit?: number } = {},
  ): Commitment[] {
    const { limit } = checkOptions(options, ["limit"], "CommitmentStore.listBySession");
    return this.byScope
      .all(
        checkText("agentId", agentId, 256),
        checkText("sessionKey", sessionKey),
        checkLimit(limit),
      )
      .map(fromRow);
  }
}
