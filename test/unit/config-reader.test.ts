// The one environment reader: types from the schema, defaults, strict numbers, errors that name
// the variable (never a secret's value), and old variable names that still work with one log line.
import { Writable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { ConfigError, logRenamed, readConfig, readEnv } from '../../common/config/env.ts';

const Schema = Type.Object({
  PORT: Type.Integer({ minimum: 1, maximum: 65535, default: 8080, description: 'a port' }),
  RATIO: Type.Number({ default: 0.5 }),
  ON: Type.Boolean({ default: false }),
  NAME: Type.String({ pattern: '^[a-z]+$', default: 'tether' }),
  API_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  NEW_NAME: Type.Optional(Type.String()),
});

describe('readEnv', () => {
  it('fills defaults, converts plain numbers and booleans, and counts an empty variable as unset', () => {
    expect(readEnv(Schema, {})).toEqual({ PORT: 8080, RATIO: 0.5, ON: false, NAME: 'tether' });
    expect(readEnv(Schema, { PORT: '9090', RATIO: '1.25', ON: 'true', NAME: '', OTHER: 'x' })).toEqual({
      PORT: 9090,
      RATIO: 1.25,
      ON: true,
      NAME: 'tether',
    });
  });

  it.each([
    ['PORT', '0x10'],
    ['PORT', '1e3'],
    ['PORT', '1.5'],
    ['PORT', ' 12'],
    ['PORT', '70000'],
    ['RATIO', '1e3'],
    ['ON', 'yes'],
    ['NAME', 'Tether'],
  ])('refuses %s=%j, naming the variable and the value', (name, value) => {
    const attempt = () => readEnv(Schema, { [name]: value });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(`${name}: ${JSON.stringify(value)} is invalid: expected`);
  });

  it("says what the variable is for, and never shows a secret's value", () => {
    expect(() => readEnv(Schema, { PORT: 'eighty' })).toThrow(
      /^PORT: "eighty" is invalid: expected integer \(a port\)$/,
    );
    expect(() => readEnv(Schema, { API_TOKEN: 'hunter2' })).toThrow(/^API_TOKEN: \(hidden\) is invalid/);
    expect(() => readEnv(Schema, { API_TOKEN: 'hunter2' })).toThrow(/^(?!.*hunter2)/s);
  });
  it("keeps a reason that already names the variable's part as it is", () => {
    expect(new ConfigError('POLICY', 'POLICY.deny: Expected array').message).toBe('POLICY.deny: Expected array');
    expect(new ConfigError('POLICY', 'Expected array').message).toBe('POLICY: Expected array');
  });
});

describe('old variable names', () => {
  const renamed = { OLD_NAME: 'NEW_NAME' };

  it('still work, report old and new once, and lose to the new name when both are set', () => {
    const reported: string[] = [];
    const onRenamed = (old: string, current: string) => reported.push(`${old}→${current}`);
    expect(readEnv(Schema, { OLD_NAME: 'a' }, { renamed, onRenamed }).NEW_NAME).toBe('a');
    expect(readEnv(Schema, { OLD_NAME: 'a', NEW_NAME: 'b' }, { renamed, onRenamed }).NEW_NAME).toBe('b');
    expect(readEnv(Schema, { NEW_NAME: 'b' }, { renamed, onRenamed }).NEW_NAME).toBe('b');
    expect(reported).toEqual(['OLD_NAME→NEW_NAME', 'OLD_NAME→NEW_NAME']);
  });

  it('an error about a value given by its old name names the old one', () => {
    const Named = Type.Object({ NEW_NAME: Type.String({ pattern: '^[a-z]+$' }) });
    expect(() => readConfig(Named, { OLD_NAME: 'X' }, (env) => env, { renamed })).toThrow(
      /^OLD_NAME: "X" is invalid: .* \(OLD_NAME is now NEW_NAME\)$/,
    );
    const build = () => {
      throw new ConfigError('NEW_NAME', 'too short');
    };
    expect(() => readConfig(Named, { OLD_NAME: 'x' }, build, { renamed })).toThrow(
      'OLD_NAME: too short (OLD_NAME is now NEW_NAME)',
    );
  });

  it('logRenamed writes one warning line in the log naming the old and the new', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _, done) => (lines.push(String(chunk)), done()) });
    logRenamed('relay', sink)('LOG_LEVEL', 'TETHER_LOG_LEVEL');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      component: 'relay',
      variable: 'LOG_LEVEL',
      replacement: 'TETHER_LOG_LEVEL',
      msg: expect.stringMatching(/LOG_LEVEL is deprecated: set TETHER_LOG_LEVEL/),
    });
  });
});
