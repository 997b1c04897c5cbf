// Runner Pods without DNS when the egress proxy is on (controller/runner-network.ts): the relay's and
// the proxy's Service names in hostAliases, read from the Services; dnsPolicy None with a name server
// where nothing answers; a missing Service holds the Session back, saying which.
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { ConfigError, loadConfig } from '../../controller/config.ts';
import { NO_DNS_CONFIG, hostAliases } from '../../controller/runner-network.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';
import { fakeWorld } from './controller-fake-cluster.ts';
import { testSession, unitConfig } from './controller-fixtures.ts';

const KEY = 'k'.repeat(40);
const RELAY = 'http://tether-relay.tether.svc:8080';
const EGRESS = 'http://tether-egress.tether.svc:3128';
const env = { TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY, TETHER_EGRESS_KEY: KEY, TETHER_RUNNER_IMAGE: 'r:t' };
const load = (more: Record<string, string>) => loadConfig({ ...env, ...more });
const service = (name: string, clusterIP?: string, type = 'ClusterIP'): V1Service => ({
  metadata: { name, namespace: 'tether' },
  spec: { type, ...(clusterIP ? { clusterIP } : {}) },
});
const SERVICES = new Map([
  ['tether-relay', service('tether-relay', '192.0.2.20')],
  ['tether-egress', service('tether-egress', '192.0.2.30')],
]);
const ALIASES = [
  { ip: '192.0.2.20', hostnames: ['tether-relay.tether.svc'] },
  { ip: '192.0.2.30', hostnames: ['tether-egress.tether.svc'] },
];

describe('the hosts runner Pods dial by name (config)', () => {
  it('are the Service names of TETHER_RELAY_URL and TETHER_EGRESS_URL; an address needs none', () => {
    expect(load({ TETHER_RELAY_URL: RELAY, TETHER_EGRESS_URL: EGRESS }).egress?.noDns).toEqual({
      hosts: [
        { variable: 'TETHER_RELAY_URL', host: 'tether-relay.tether.svc', service: 'tether-relay' },
        { variable: 'TETHER_EGRESS_URL', host: 'tether-egress.tether.svc', service: 'tether-egress' },
      ],
    });
    const local = load({ TETHER_RELAY_URL: 'http://127.0.0.1:8080', TETHER_EGRESS_URL: 'http://[::1]:3128' });
    expect(local.egress?.noDns).toEqual({ hosts: [] });
  });

  it('keep the resolver on the host network (the test tier: no NetworkPolicy there), and without egress', () => {
    const tier = load({ TETHER_EGRESS_URL: 'http://127.0.0.1:3128', TETHER_RUNNER_HOST_NETWORK: 'true' });
    expect(tier.egress).toBeDefined();
    expect(tier.egress?.noDns).toBeUndefined();
    expect(desiredPod(testSession(), { ...unitConfig(), ...tier }).spec).not.toHaveProperty('dnsPolicy');
    expect(desiredPod(testSession(), unitConfig()).spec).not.toHaveProperty('dnsConfig');
  });

  it.each([
    ['TETHER_RELAY_URL', { TETHER_RELAY_URL: 'http://relay.example.com', TETHER_EGRESS_URL: EGRESS }],
    ['TETHER_RELAY_URL', { TETHER_RELAY_URL: 'http://tether-relay.other.svc:8080', TETHER_EGRESS_URL: EGRESS }],
    ['TETHER_EGRESS_URL', { TETHER_EGRESS_URL: 'http://egress:3128' }],
  ])('refuse any other name, naming %s', (variable, more) => {
    expect(() => load(more)).toThrow(ConfigError);
    expect(() => load(more)).toThrow(new RegExp(`${variable}.*resolve no names`));
  });
});

describe('desiredPod with the egress proxy on', () => {
  const config = load({ TETHER_RELAY_URL: RELAY, TETHER_EGRESS_URL: EGRESS });
  const session = testSession({ name: 'abc-20261122083000-k3x9', uid: 'uid-1' });

  it('has no DNS: dnsPolicy None, a name server nothing serves, the two Services in hostAliases', () => {
    const pod = desiredPod(session, { ...config, hostAliases: ALIASES });
    const withDns = desiredPod(session, { ...config, egress: { ...config.egress!, noDns: undefined } });
    expect(pod.spec).toEqual({
      ...withDns.spec,
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['127.0.0.1'],
        searches: [],
        options: [
          { name: 'attempts', value: '1' },
          { name: 'timeout', value: '1' },
        ],
      },
      hostAliases: ALIASES,
    });
    expect(NO_DNS_CONFIG.nameservers).toEqual(['127.0.0.1']);
  });

  it('gives each Pod its own copies: a caller changing one Pod changes no other', () => {
    const first = desiredPod(session, { ...config, hostAliases: ALIASES });
    first.spec!.dnsConfig!.nameservers!.push('192.0.2.53');
    first.spec!.hostAliases![0]!.hostnames!.push('pypi.org');
    const second = desiredPod(session, { ...config, hostAliases: ALIASES });
    expect(second.spec!.dnsConfig!.nameservers).toEqual(['127.0.0.1']);
    expect(second.spec!.hostAliases).toEqual(ALIASES);
    expect(ALIASES[0]!.hostnames).toEqual(['tether-relay.tether.svc']);
  });

  it('changes the runner key when a Service address changes (a live Pod with the old one takes no Session)', () => {
    const key = (pod: V1Pod) => pod.metadata!.annotations!['tether.dev/runner-key'];
    const moved = [ALIASES[0]!, { ip: '192.0.2.31', hostnames: ['tether-egress.tether.svc'] }];
    const before = desiredPod(session, { ...config, hostAliases: ALIASES });
    expect(key(desiredPod(testSession({ name: 'next', uid: 'u2' }), { ...config, hostAliases: ALIASES }))).toBe(
      key(before),
    );
    expect(key(desiredPod(session, { ...config, hostAliases: moved }))).not.toBe(key(before));
  });
});

describe('hostAliases from the Services', () => {
  const hosts = load({ TETHER_RELAY_URL: RELAY, TETHER_EGRESS_URL: EGRESS }).egress!.noDns!.hosts;
  it('maps each host to its Service cluster IP, or says which Service is missing or has none', () => {
    expect(hostAliases(hosts, 'tether', (n) => SERVICES.get(n))).toEqual({ aliases: ALIASES });
    expect(hostAliases(hosts, 'tether', () => undefined)).toEqual({
      problem:
        'waiting for Service tether/tether-relay (TETHER_RELAY_URL): it is not found; runner Pods reach ' +
        'tether-relay.tether.svc by its cluster IP, as they resolve no names with the egress proxy on',
    });
    const headless = (n: string) => (n === 'tether-egress' ? service(n, 'None') : SERVICES.get(n));
    expect(hostAliases(hosts, 'tether', headless)).toMatchObject({
      problem: expect.stringContaining('Service tether/tether-egress (TETHER_EGRESS_URL): it has no cluster IP'),
    });
  });
});

describe('a reconcile pass while a Service is missing', () => {
  const config = { ...load({ TETHER_RELAY_URL: RELAY, TETHER_EGRESS_URL: EGRESS }), keepAliveMs: 0 };
  const now = () => new Date('2026-11-22T09:00:00Z');

  it('holds the Session Queued, saying which Service, and makes its Pod with the aliases once it is \
there', async () => {
    const session = testSession({ name: 'a' });
    const world = fakeWorld(config, now, [session]);
    await world.pass('tether/a');
    const queued = world.cluster.sessions.get('tether/a')!;
    expect(queued.status?.phase).toBe('Queued');
    expect(queued.status?.conditions).toContainEqual(
      expect.objectContaining({
        type: 'Admitted',
        status: 'False',
        message: expect.stringContaining('waiting for Service tether/tether-relay (TETHER_RELAY_URL)'),
      }),
    );
    expect(world.calls).toContain('event Queued');
    expect(world.cluster.pods.size).toBe(0);

    for (const [name, made] of SERVICES) world.cluster.services.set(name, made);
    world.sync();
    await world.pass('tether/a');
    expect(world.cluster.sessions.get('tether/a')!.status?.phase).toBe('Starting');
    const [pod] = world.cluster.pods.values();
    expect(pod!.spec).toMatchObject({ dnsPolicy: 'None', dnsConfig: NO_DNS_CONFIG, hostAliases: ALIASES });
  });
});
