import { describe, expect, it } from 'vitest';
import { formatDuration, maskPhone, parseDuration, previewPrompt } from '../../common/session/display.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

describe('display helpers', () => {
  it.each([
    ['+14155550123', '+1415•••0123'],
    ['whatsapp:+447700900123', '+4477•••0123'],
    ['+1234567', '+1•••67'],
  ])('masks %s as %s', (phone, masked) => expect(maskPhone(phone)).toBe(masked));

  it('previews prompts on one line with an ellipsis', () => {
    expect(previewPrompt('fix\n  the   bug')).toBe('fix the bug');
    expect(previewPrompt('a'.repeat(50), 10)).toBe(`${'a'.repeat(9)}…`);
  });

  it.each([
    [0, '0s'],
    [999, '0s'],
    [192_000, '3m12s'],
    [3_725_000, '1h2m5s'],
    [3_600_000, '1h0m0s'],
    [-5, '0s'],
  ])('formats %d ms as %s', (ms, text) => expect(formatDuration(ms)).toBe(text));

  it.each([
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['1h30m', 5_400_000],
    ['2h', 7_200_000],
  ])('parses %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '10', '1.5h', '-1m', '5d', 'm'])('rejects duration %j with a clear error', (text) => {
    expect(() => parseDuration(text)).toThrow(/invalid duration/);
  });

  it('derives stable names that never contain the number', () => {
    const phone = '+14155550123';
    expect(testPhoneHash(phone)).toMatch(/^[0-9a-f]{16}$/);
    expect(testPhoneHash(phone)).toBe(testPhoneHash(phone));
    expect(workspaceName(testPhoneHash(phone))).toBe(`ws-${testPhoneHash(phone)}`);
    const name = sessionName(testPhoneHash(phone), new Date('2026-11-22T08:30:05Z'), 'ab12');
    expect(name).toBe(`${testPhoneHash(phone)}-20261122083005-ab12`);
    expect(name).not.toContain('4155550123');
    expect(name.length).toBeLessThanOrEqual(63);
  });
});
