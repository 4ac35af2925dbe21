/** The header's live indicator: "live", "reconnecting", "closed", or "" when no stream is open. */
export function setLive(state) {
  const badge = document.getElementById("live");
  badge.dataset.state = state;
  badge.textContent = state === "" ? "" : state === "live" ? "● live" : `○ ${state}`;
}
