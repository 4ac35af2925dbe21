import { openStateHome } from "../../home.js";

export const MAIN_KEY = "agent:main:main";
export const GROUP_KEY = "agent:main:telegram:group:-5027021161";
/** A session key with the characters a URL path treats specially. */
export const ODD_KEY = "agent:main:web/chat?x=1&y=%2F#frag";
export const SECRET_REFERENCE = "env:OPENAI_API_KEY";
export const SENSITIVE_VALUE = "lives at 12 Garden Lane";

export interface SeededHome {
  home: string;
  /** The first session of MAIN_KEY: the conversation, then reset. */
  sessionId: string;
  activeId: string;
  groupId: string;
  researchId: string;
  /** Event ids in the conversation, by role in the story. */
  ids: { ask: string; toolCall: string; compaction: string; branchReply: string };
  migrationRunId: string;
  backupRunId: string;
  topicId: string;
}

const text = (role: string, body: string) => ({
  type: "message",
  message: { role, content: [{ type: "text", text: body }] },
});

/** The conversation of the sessions CLI tests: tools, a compaction, and a branch. */
function conversation(home: ReturnType<typeof openStateHome>, sessionId: string) {
  const scope = { agentId: "main", sessionId };
  const ask = home.transcripts.append(scope, text("user", "Remind me to water the basil."));
  const call = home.transcripts.append(scope, {
    type: "message",
    message: {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "Use the reminders tool." },
        {
          type: "toolCall",
          id: "toolu_01",
          name: "reminders_add",
          arguments: { text: "Water the basil" },
        },
      ],
      stopReason: "toolUse",
    },
  });
  home.transcripts.append(scope, {
    type: "message",
    message: {
      role: "toolResult",
      toolCallId: "toolu_01",
      toolName: "reminders_add",
      content: [{ type: "text", text: "Reminder created for 08:00" }],
      isError: false,
    },
  });
  home.transcripts.append(scope, text("assistant", "Done: I will remind you at 08:00."));
  const compaction = home.transcripts.append(scope, {
    type: "compaction",
    summary: "## Goal\nKeep the garden watered.",
    tokensBefore: 9120,
  });
  home.transcripts.branch(scope, ask.event.id);
  const reply = home.transcripts.append(
    scope,
    text("assistant", "Which plant, the basil or the tomatoes?"),
  );
  return {
    ask: ask.event.id,
    toolCall: call.event.id,
    compaction: compaction.event.id,
    branchReply: reply.event.id,
  };
}

/**
 * A home with two agents; a session key that was reset, whose first session holds a
 * conversation with tool calls, a compaction and a branch; a key with URL-special characters;
 * memory with normal, sensitive and secret_ref facts; a migration run and a backup run.
 */
export function seedHome(dir: string): SeededHome {
  const home = openStateHome({ home: dir });
  try {
    const { sessionId } = home.sessions.start("main", MAIN_KEY);
    home.sessions.patch("main", MAIN_KEY, {
      chatType: "direct",
      channel: "telegram",
      modelProvider: "anthropic",
      model: "claude-sonnet-4-5",
      label: "Dana",
    });
    const ids = conversation(home, sessionId);
    const { sessionId: activeId } = home.sessions.reset("main", MAIN_KEY, { reason: "idle" });
    const { sessionId: groupId } = home.sessions.start("main", GROUP_KEY);
    home.sessions.patch("main", GROUP_KEY, { chatType: "group", label: "Garden club" });
    home.transcripts.append(
      { agentId: "main", sessionId: groupId },
      text("user", "Who waters on Sunday?"),
    );
    home.sessions.start("main", ODD_KEY);
    const { sessionId: researchId } = home.sessions.start("research", "agent:research:main");
    home.transcripts.append(
      { agentId: "research", sessionId: researchId },
      text("user", "Basil varieties that like shade?"),
    );
    const topic = home.memory.createTopic(
      { agentId: "main", sessionId },
      { title: "Garden watering", labels: ["garden"], openLoops: ["Tomatoes need a reminder"] },
    );
    home.memory.switchTopic({ agentId: "main", sessionId }, topic.topicId);
    home.memory.upsertFact("main", {
      scope: "user",
      key: "name",
      category: "background",
      value: "Dana",
    });
    home.memory.upsertFact("main", {
      scope: "user",
      key: "address",
      category: "background",
      value: SENSITIVE_VALUE,
      sensitivity: "sensitive",
    });
    home.memory.upsertFact("main", {
      scope: "agent",
      key: "openai",
      category: "account",
      value: SECRET_REFERENCE,
      sensitivity: "secret_ref",
    });
    const migrationRunId = "run-2026-03-06";
    home.migrations.startRun(migrationRunId);
    home.migrations.recordSource({
      sourceKey: "agents/main/sessions/sessions.json",
      kind: "session-index",
      path: `${dir}/agents/main/sessions/sessions.json`,
      targetTable: "session_entries",
      sha256: "ab".repeat(32),
      sizeBytes: 2048,
      recordCount: 2,
      lastRunId: migrationRunId,
      status: "imported",
      importedAt: Date.now(),
      report: {},
    });
    home.migrations.finishRun(migrationRunId, "succeeded", { imported: 1 });
    const backupRunId = "backup-1";
    home.backups.start(backupRunId, Date.now(), `${dir}/backups/missing.tar.gz`);
    home.backups.finish(backupRunId, "succeeded", { databases: [{}, {}, {}], files: [] });
    return {
      home: dir,
      sessionId,
      activeId,
      groupId,
      researchId,
      ids,
      migrationRunId,
      backupRunId,
      topicId: topic.topicId,
    };
  } finally {
    home.close();
  }
}
