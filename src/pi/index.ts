/**
 * agentstate/pi: a drop-in `SessionManager` for programs built on `@mariozechner/pi-coding-agent`,
 * storing sessions in agentstate. A separate entry so that `import("agentstate")` never loads pi.
 */
export {
  AgentStateSessionManager,
  type AgentStateSessionOptions,
} from "./agentstate-session-manager.js";
