import { StateError } from "../../db/errors.js";
import { type DeliveryQueueRow, entryFromRow } from "./delivery-queue-rows.js";

// A type, not an interface: it is bound as statement parameters, which need an index signature.
export type LeaseParams = { queue: string; id: string; leaseId: string };

function notFound(params: { queue: string; id: string }): StateError {
  return new StateError("E_NOT_FOUND", `no delivery ${params.queue}/${params.id}`, {
    details: { queue: params.queue, id: params.id },
  });
}

/**
 * Why a call under a lease changed nothing, from the entry as it is now (`current`): gone, taken
 * over by another claimer, settled, or in a state the call does not apply to.
 */
export function leaseLostError(
  params: LeaseParams,
  current: DeliveryQueueRow | undefined,
  now: number,
): StateError {
  if (!current) return notFound(params);
  const what = `delivery ${params.queue}/${params.id}`;
  const status = entryFromRow(current, now).status;
  const details = { ...params, leaseOwner: current.lease_owner, status };
  if (current.lease_id === params.leaseId) {
    const why =
      status === "pending"
        ? "its lease lapsed before the send began; claim it again"
        : `it is ${status}`;
    return new StateError("E_CONFLICT", `${what} cannot do that: ${why}`, { details });
  }
  const since =
    status === "pending"
      ? `its lease lapsed and ${current.lease_owner ?? "nobody"} holds it now`
      : `it is ${status}`;
  return new StateError(
    "E_CONFLICT",
    `${what} is no longer leased with ${params.leaseId}: ${since}`,
    {
      details,
    },
  );
}

/** Why `resolveUnknown` changed nothing: no such entry, or its outcome is known. */
export function notUnknownError(
  key: { queue: string; id: string },
  current: DeliveryQueueRow | undefined,
  now: number,
): StateError {
  if (!current) return notFound(key);
  return new StateError(
    "E_CONFLICT",
    `delivery ${key.queue}/${key.id} is ${entryFromRow(current, now).status}, not unknown`,
    { details: { queue: key.queue, id: key.id } },
  );
}
