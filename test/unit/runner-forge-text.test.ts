// What Tether writes to the forge (commit subject and message, pull request title and body) shows
// every character that hides or reorders text as a code point, as the phone does.
import { describe, expect, it } from 'vitest';
import { showHidden } from '../../common/hidden-text.ts';
import { forgeText } from '../../runner-image/forge/text.ts';
import { commitMessage } from '../../runner-image/git/store.ts';

/** What a reviewer must never be handed raw: anything Tether escapes. */
const HIDDEN = /(?![\n\t]|\uFE0E|\uFE0F)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

const HOSTILE: Array<[string, string]> = [
  ['right-to-left override', '\u202E'],
  ['left-to-right override', '\u202D'],
  ['right-to-left embedding', '\u202B'],
  ['pop directional formatting', '\u202C'],
  ['right-to-left isolate', '\u2067'],
  ['first strong isolate', '\u2068'],
  ['pop directional isolate', '\u2069'],
  ['right-to-left mark', '\u200F'],
  ['arabic letter mark', '\u061C'],
  ['zero-width space', '\u200B'],
  ['zero-width non-joiner', '\u200C'],
  ['zero-width joiner', '\u200D'],
  ['word joiner', '\u2060'],
  ['byte order mark', '\uFEFF'],
  ['soft hyphen', '\u00AD'],
  ['mongolian vowel separator', '\u180E'],
  ['hangul filler', '\u3164'],
  ['halfwidth hangul filler', '\uFFA0'],
  ['variation selector 1', '\uFE00'],
  ['variation selector 17', '\u{E0100}'],
  ['tag latin capital A', '\u{E0041}'],
  ['bell', '\u0007'],
  ['escape', '\u001B'],
  ['NUL', '\u0000'],
  ['backspace', '\u0008'],
  ['delete', '\u007F'],
  ['next line (C1)', '\u0085'],
  ['line separator', '\u2028'],
  ['paragraph separator', '\u2029'],
];

const codePoint = (c: string) => `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}>`;

describe('text for the forge', () => {
  it.each(HOSTILE)('%s: shown as its code point in the text, the commit subject and message', (_name, char) => {
    expect(forgeText(`fix${char} the login`)).toBe(`fix${codePoint(char)} the login`);
    const message = commitMessage(`make the${char} button blue\nand the ${char}footer`, 'cmd-1');
    const [subject] = message.split('\n');
    expect(subject).toBe(`make the${codePoint(char)} button blue`);
    expect(message).toContain(`and the ${codePoint(char)}footer`);
    expect(message).not.toMatch(HIDDEN);
  });

  it('keeps newlines, tabs and emoji as they are; a CRLF or a lone CR is a newline', () => {
    expect(forgeText('one\r\ntwo\tthree\nfour ❤️\rfive')).toBe('one\ntwo\tthree\nfour ❤️\nfive');
  });

  it('a long run of hidden characters is one short mark, and the subject stays short', () => {
    const subject = commitMessage(
      `fix ${'\u200B'.repeat(4000)} this ${'\u202E\u2066\u200B\u0007'.repeat(100)}`,
      'cmd-1',
    ).split('\n')[0]!;
    expect(subject).toBe('fix <U+200B ×4000> this <400 hidden: U+202E U+2066 U+200B …>');
  });

  it('is the escaping the phone uses', () => {
    for (const [, char] of HOSTILE) expect(forgeText(`a${char}b`)).toBe(showHidden(`a${char}b`));
  });
});
