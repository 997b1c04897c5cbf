// Attack: a carried port named `localhost` is held in the Pod's network on 127.0.0.1 alone, so [::1] at that
// port is free for the agent, which shares the network. A supervisor resolving `localhost` where the hosts
// file also maps it to ::1 (most distributions; Node keeps the resolver's order, ::1 first, and tries it
// first) sends its relay token, its API server token or its egress password (TETHER_RELAY_URL,
// TETHER_EGRESS_URL, the node's API server address) to the agent's listener. Every address `localhost`
// may name must be held, or `localhost` refused.
import { describe, expect, it } from 'vitest';
import { carriedPorts } from '../../local/node-agent/carried-ports.ts';
import type { LocalProcessSpec } from '../../local/node-agent/pod-process.ts';

const runner = (env: Record<string, string>): LocalProcessSpec => ({
  container: 'runner',
  command: 'node',
  args: [],
  env,
  cwd: '/',
});

/** The carried URL's port is held at both loopbacks, or the URL is refused. */
function heldAtBoth(make: () => ReturnType<typeof carriedPorts>, port: number): boolean {
  let carried: ReturnType<typeof carriedPorts>;
  try {
    carried = make();
  } catch {
    return true;
  }
  const hosts = carried.filter((entry) => entry.port === port).map((entry) => entry.host);
  return hosts.includes('127.0.0.1') && hosts.includes('::1');
}

describe('local node: a carried port named localhost', () => {
  it("leaves no loopback address of the relay's or the proxy's port to the agent", () => {
    const specs = [runner({ TETHER_RELAY_URL: 'http://localhost:8081', TETHER_EGRESS_URL: 'http://localhost:3128' })];
    expect(heldAtBoth(() => carriedPorts(specs, 'https://127.0.0.1:6443'), 8081)).toBe(true);
    expect(heldAtBoth(() => carriedPorts(specs, 'https://127.0.0.1:6443'), 3128)).toBe(true);
  });

  it("leaves no loopback address of the API server's port to the agent", () => {
    expect(heldAtBoth(() => carriedPorts([], 'https://localhost:6443'), 6443)).toBe(true);
  });
});
