// Two sockets joined both ways: what one sends the other receives; either closing or failing ends both.
import type { Socket } from 'node:net';

export function joinSockets(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  // A connection reset or refused on one side is the other side's end too: nothing to report.
  for (const [from, to] of [
    [a, b],
    [b, a],
  ] as const) {
    from.on('error', () => to.destroy());
    from.on('close', () => to.destroy());
  }
}
