// The one reader of environment variables, for every component (the shape of fastify's env-schema):
// a TypeBox object schema names each variable with its rule and default; readEnv checks the
// environment once and returns the value typed by the schema, or throws a ConfigError naming the
// first bad variable.
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { createLogger } from '../log.ts';

export type EnvSource = Record<string, string | undefined>;

export class ConfigError extends Error {
  readonly variable: string;
  readonly reason: string;
  /** The message names the variable first (a reason that already starts with it, e.g. NAME.field: …, stays). */
  constructor(variable: string, reason: string) {
    super(reason.startsWith(variable) ? reason : `${variable}: ${reason}`);
    this.name = 'ConfigError';
    this.variable = variable;
    this.reason = reason;
  }
}

/** Variables whose values never appear in an error. */
const SECRET_NAME = /TOKEN|KEY|SECRET|SID|PASSWORD/;

export interface ReadEnvOptions {
  /** Old name → its name now. The old name still works; each one in use is reported to onRenamed. */
  renamed?: Readonly<Record<string, string>>;
  onRenamed?: (old: string, current: string) => void;
}

/** `"value"` as shown in an error: cut short, and never for a secret. */
function shown(variable: string, value: unknown): string {
  return SECRET_NAME.test(variable) ? '(hidden)' : JSON.stringify(String(value).slice(0, 40));
}

/** Integers, numbers and booleans arrive as text: only their plain spelling converts (no 0x10, 1e3, 1.5 → 1). */
function converted(schema: TSchema, text: string): unknown {
  if (schema.type === 'integer' && /^-?[0-9]+$/.test(text)) return Number(text);
  if (schema.type === 'number' && /^-?[0-9]+(\.[0-9]+)?$/.test(text)) return Number(text);
  if (schema.type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

/** The variables the schema names, taken from the source (an empty one counts as unset), old names applied. */
function given(schema: TObject, source: EnvSource, options: ReadEnvOptions): Record<string, string> {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(schema.properties)) if (source[name]) raw[name] = source[name];
  for (const [old, current] of Object.entries(options.renamed ?? {})) {
    if (!source[old]) continue;
    options.onRenamed?.(old, current);
    raw[current] ??= source[old];
  }
  return raw;
}

const lower = (text: string) => text.charAt(0).toLowerCase() + text.slice(1);

/** Checks the source against the schema, defaults filled in; throws ConfigError naming the first bad variable. */
export function readEnv<S extends TObject>(schema: S, source: EnvSource, options: ReadEnvOptions = {}): Static<S> {
  const raw = given(schema, source, options);
  const properties = schema.properties as Record<string, TSchema>;
  const typed = Object.fromEntries(
    Object.entries(raw).map(([name, text]) => [name, converted(properties[name]!, text)]),
  );
  const value = Value.Default(schema, typed) as Record<string, unknown>;
  const error = Value.Errors(schema, value).First();
  if (error) {
    const variable = error.path.replace(/^\//, '').split('/')[0] || 'environment';
    const expected = properties[variable]?.description;
    const reason =
      variable in raw ? `${shown(variable, raw[variable])} is invalid: ${lower(error.message)}` : error.message;
    throw new ConfigError(variable, `${reason}${expected ? ` (${expected})` : ''}`);
  }
  return value as Static<S>;
}

/** The old name each variable was given by, when it was. */
function oldNames(source: EnvSource, renamed: ReadEnvOptions['renamed'] = {}): Map<string, string> {
  return new Map(
    Object.entries(renamed).flatMap(([old, current]) => (source[old] && !source[current] ? [[current, old]] : [])),
  );
}

/**
 * readEnv, then `build` (the component's checks and shape); an error about a variable given by its
 * old name names the old one, as the operator wrote it.
 */
export function readConfig<S extends TObject, T>(
  schema: S,
  source: EnvSource,
  build: (env: Static<S>) => T,
  options: ReadEnvOptions = {},
): T {
  try {
    return build(readEnv(schema, source, options));
  } catch (error) {
    const old = error instanceof ConfigError ? oldNames(source, options.renamed).get(error.variable) : undefined;
    if (!old) throw error;
    const { variable, reason } = error as ConfigError;
    throw new ConfigError(old, `${reason} (${old} is now ${variable})`);
  }
}

/** Reports an old variable name in use: one warning line in the component's log, naming the old and the new. */
export const logRenamed =
  (component: string, destination?: Parameters<typeof createLogger>[0]['destination']) =>
  (old: string, current: string): void =>
    createLogger({ component, level: 'warn', destination }).warn(
      { variable: old, replacement: current },
      `${old} is deprecated: set ${current} instead (the old name still works for now)`,
    );

/** A check after the schema's: the value, or a ConfigError naming the variable with what went wrong. */
export function checked<T>(variable: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(variable, (error as Error).message);
  }
}
