// The shape of an install's permission policy (TETHER_PERMISSION_POLICY for the runner, filled by
// the controller from runner.permissionPolicy in the chart). One definition: the controller checks
// it at start-up, the runner parses it over its defaults (runner-image/policy.ts).
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export const PolicySchema = Type.Object(
  {
    allow: Type.Array(Type.String({ minLength: 1 })),
    ask: Type.Array(Type.String({ minLength: 1 })),
    deny: Type.Array(Type.String({ minLength: 1 })),
    /** Edit/Write/MultiEdit/NotebookEdit inside the repository are allowed without asking. */
    editsInsideRepo: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type Policy = Static<typeof PolicySchema>;

/** The policy `json` says, over `defaults`; throws naming the variable and the field at fault. */
export function policyOver(defaults: Policy, json: string, variable: string): Policy {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new Error(`${variable} is not JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${variable} must be a JSON object`);
  const merged = { ...defaults, ...value };
  const first = Value.Errors(PolicySchema, merged).First();
  if (first) throw new Error(`${variable}${first.path.replace(/\//g, '.')}: ${first.message}`);
  return merged;
}
