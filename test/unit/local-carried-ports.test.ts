// Which host loopback ports a runner Pod's network gets on the local node: the API server's, the
// relay's and the egress proxy's, read from the node's address and the Pod's env; any other host refused.
import { describe, expect, it } from 'vitest';
import { carriedPorts, usesEgressProxy } from '../../local/node-agent/carried-ports.ts';
import type { LocalProcessSpec } from '../../local/node-agent/pod-process.ts';

const spec = (container: string, env: Record<string, string>): LocalProcessSpec => ({
  container,
  command: 'node',
  args: [],
  env,
  cwd: '/',
});

describe('local node: the ports carried into a Pod network', () => {
  it("the API server's, the relay's and the proxy's, once each, at their loopback address", () => {
    const specs = [
      spec('agent', {}),
      spec('runner', {
        TETHER_RELAY_URL: 'http://localhost:8081',
        TETHER_EGRESS_URL: 'http://[::1]:3128',
        OTHER_URL: 'http://127.0.0.1:9999',
      }),
    ];
    expect(carriedPorts(specs, 'https://127.0.0.1:6443')).toEqual([
      { host: '127.0.0.1', port: 6443 },
      { host: '127.0.0.1', port: 8081 },
      { host: '::1', port: 3128 },
    ]);
    expect(carriedPorts([spec('runner', { TETHER_RELAY_URL: 'http://127.0.0.1:6443' })], 'https://localhost')).toEqual([
      { host: '127.0.0.1', port: 443 },
      { host: '127.0.0.1', port: 6443 },
    ]);
  });

  it('refuses a host that is not loopback, and what is not a URL, naming the container and the variable', () => {
    expect(() =>
      carriedPorts([spec('runner', { TETHER_EGRESS_URL: 'http://10.0.0.1:3128' })], 'https://127.0.0.1:1'),
    ).toThrow(`container runner's TETHER_EGRESS_URL names the host "10.0.0.1", not loopback`);
    expect(() => carriedPorts([], 'https://kubernetes.default.svc')).toThrow(
      `the node's API server address names the host "kubernetes.default.svc", not loopback`,
    );
    expect(() => carriedPorts([spec('runner', { TETHER_RELAY_URL: 'relay' })], 'https://127.0.0.1:1')).toThrow(
      `container runner's TETHER_RELAY_URL ("relay") is not a URL`,
    );
  });

  it('a Pod goes out through the egress proxy when a container has its URL', () => {
    expect(usesEgressProxy([spec('agent', {}), spec('runner', { TETHER_EGRESS_URL: 'http://127.0.0.1:1' })])).toBe(
      true,
    );
    expect(usesEgressProxy([spec('agent', {}), spec('runner', { TETHER_EGRESS_URL: '' })])).toBe(false);
  });
});
