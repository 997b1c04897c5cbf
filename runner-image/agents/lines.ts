// Splits an agent's output stream into bounded lines. Huge lines are cut (the rest of the line is
// dropped, not buffered), invalid UTF-8 is replaced: agent output can never exhaust memory.
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';

export const MAX_LINE_CHARS = 64 * 1024;

export function onLines(stream: Readable, handle: (line: string) => void, maxChars = MAX_LINE_CHARS): Promise<void> {
  const decoder = new StringDecoder('utf8');
  let buffer = '';
  let overflow = false;
  const push = (text: string) => {
    let rest = text;
    for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
      const line = overflow ? buffer : buffer + rest.slice(0, nl);
      handle((line.length > maxChars ? line.slice(0, maxChars) : line).replace(/\r$/, ''));
      buffer = '';
      overflow = false;
      rest = rest.slice(nl + 1);
    }
    if (overflow) return;
    buffer += rest;
    if (buffer.length > maxChars) {
      buffer = buffer.slice(0, maxChars);
      overflow = true;
    }
  };
  return new Promise((resolve, reject) => {
    stream.on('data', (chunk: Buffer) => push(decoder.write(chunk)));
    stream.on('error', reject);
    stream.on('end', () => {
      push(decoder.end());
      if (buffer) handle(buffer);
      resolve();
    });
  });
}
