import { StateError } from "../../db/errors.js";
import { checkText } from "../checks.js";

/** The form of a derived input id; its number is the input's arrival_seq. */
export const DERIVED_ID = /^in-(\d{1,16})-[0-9a-f]{12}$/;

/** A chosen input id: any text but the derived form, which would find another row. */
export function checkChosenId(inputId: unknown, maxLength: number): string {
  const id = checkText("input id", inputId, maxLength);
  if (!DERIVED_ID.test(id)) return id;
  throw new StateError("E_INVALID_ARGUMENT", `input id ${id} has the form of a derived id`, {
    details: { inputId: id },
  });
}

/** Parameters that find an input by id (see `ID` in input-sql.ts). */
export function idParams(inputId: string): { inputId: string; seq: number | null } {
  const derived = DERIVED_ID.exec(inputId);
  return { inputId, seq: derived ? Number(derived[1]) : null };
}
