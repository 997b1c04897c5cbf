// JSON-valued runner Pod settings from the controller's config (the chart writes them with toJson):
// the shape is checked here, each field by the API server when a Pod is created.
import { ConfigError } from '../common/config/env.ts';
import { CONDITION_TYPE_PATTERN } from '../common/session/patterns.ts';

/** Label prefixes that are Tether's own: the NetworkPolicy and the controller select runner Pods by them. */
export const RESERVED_LABEL_PREFIXES = ['tether.dev/', 'app.kubernetes.io/'] as const;
const LABEL_KEY = new RegExp(CONDITION_TYPE_PATTERN);
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function parsed(variable: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(variable, `is not JSON: ${(error as Error).message}`);
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A JSON object of objects or strings (affinity, nodeSelector), or undefined when unset or empty. */
export function jsonObject(variable: string, text: string | undefined): Record<string, unknown> | undefined {
  if (!text) return undefined;
  const value = parsed(variable, text);
  if (!isObject(value)) throw new ConfigError(variable, 'must be a JSON object');
  return Object.keys(value).length ? value : undefined;
}

/** A JSON list of objects (tolerations, topologySpreadConstraints), or undefined when unset or empty. */
export function jsonList(variable: string, text: string | undefined): Array<Record<string, unknown>> | undefined {
  if (!text) return undefined;
  const value = parsed(variable, text);
  if (!Array.isArray(value) || !value.every(isObject))
    throw new ConfigError(variable, 'must be a JSON list of objects');
  return value.length ? value : undefined;
}

/** More labels for runner Pods: valid label keys and values, none of Tether's own prefixes. */
export function podLabels(variable: string, text: string | undefined): Record<string, string> | undefined {
  const labels = jsonObject(variable, text);
  if (!labels) return undefined;
  for (const [key, value] of Object.entries(labels)) {
    const reserved = RESERVED_LABEL_PREFIXES.find((prefix) => key.startsWith(prefix));
    if (reserved) throw new ConfigError(variable, `"${key}": labels under ${reserved} are Tether's own`);
    if (!LABEL_KEY.test(key) || key.length > 316) throw new ConfigError(variable, `"${key}" is not a label key`);
    if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) {
      throw new ConfigError(variable, `"${key}": ${JSON.stringify(value)} is not a label value`);
    }
  }
  return labels as Record<string, string>;
}
