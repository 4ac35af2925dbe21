-- Which host owns each agent, for homes whose control plane is shared by several gateway hosts
-- (see openControlPlane). `epoch` grows by one every time a host wins the agent: writes made for
-- the agent carry the epoch they were made under, and are refused once it has moved on, so a host
-- that stalled past its lease cannot overwrite its successor. A released lease keeps its row
-- (owner_host NULL) so that the next owner's epoch still grows. For the same reason its deadline is
-- `lease_expires_at`, not `expires_at`: gc deletes every row whose `expires_at` has passed
-- (stores/global/expiry.ts), and a lapsed lease deleted would start the next owner at epoch 1 again.
CREATE TABLE agent_leases (
  agent_id TEXT PRIMARY KEY,
  owner_host TEXT,
  epoch INTEGER NOT NULL,
  lease_expires_at INTEGER NOT NULL,
  acquired_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

-- renew() walks one host's leases.
CREATE INDEX agent_leases_owner ON agent_leases (owner_host) WHERE owner_host IS NOT NULL;
