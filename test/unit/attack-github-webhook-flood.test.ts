// Anyone who can reach POST /github/webhook can send bodies: nothing proves GitHub sent one before
// it is all in (the signature covers the whole body). A flood of large bodies sent slowly would have
// the relay hold each one (up to GITHUB_BODY_LIMIT) — hundreds of them exceed the relay's memory
// limit and take WhatsApp down with it. The route reads a bounded number at once and refuses the
// rest with 503 before reading them; once they are gone, GitHub's deliveries are taken again.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { startGithubRelay, type GithubRelay } from './github-relay.ts';
import { payloads, signed } from './github-fixtures.ts';

/** Unsigned uploads that announce a MiB and send a KiB, left open. */
const FLOOD = 120;
/** The most the relay may read at once (what it refuses beyond must be at least FLOOD minus this). */
const READ_AT_ONCE_AT_MOST = 64;

let relay: GithubRelay | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await relay?.close();
});

function slowUpload(port: number, answers: string[]): void {
  const socket = connect(port, '127.0.0.1', () => {
    socket.write(
      'POST /github/webhook HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n' +
        `X-Hub-Signature-256: sha256=${'0'.repeat(64)}\r\nContent-Length: ${1024 * 1024}\r\n\r\n` +
        'x'.repeat(1024),
    );
  });
  socket.on('data', (chunk: Buffer) => answers.push(chunk.toString().split('\r\n')[0]!));
  socket.on('error', () => undefined);
  sockets.push(socket);
}

describe('an unsigned flood of slow bodies', () => {
  it('is refused beyond a bounded number read at once; a signed delivery is taken once it is gone', async () => {
    relay = await startGithubRelay();
    const port = Number(new URL(relay.base).port);
    const answers: string[] = [];
    for (let i = 0; i < FLOOD; i++) slowUpload(port, answers);
    await eventually(() => {
      expect(answers.filter((a) => a.includes(' 503 ')).length).toBeGreaterThanOrEqual(FLOOD - READ_AT_ONCE_AT_MOST);
    }, 10_000);
    for (const socket of sockets.splice(0)) socket.destroy();
    const delivery = signed('check_run', payloads.checkFailed());
    await eventually(async () => {
      const res = await fetch(`${relay!.base}/github/webhook`, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      expect(res.status).toBe(202);
    }, 10_000);
  }, 30_000);
});
