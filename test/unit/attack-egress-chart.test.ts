// Attack: around the egress proxy through the runner Pod's NetworkPolicy. In a cluster the agent
// container shares its Pod's network with the supervisor, so whatever the runner policy opens, the
// agent reaches directly, without the proxy: cluster DNS (which recurses to any name server on the
// internet: a DNS tunnel to a host nobody allowed), and — when the chart cannot read the API server's
// addresses (helm template, GitOps) — every private address of the cluster on 443 and 6443.
import { beforeAll, describe, expect, it } from 'vitest';
import { HELM_SETUP_TIMEOUT, find, helmBin, render, renderError, type KubeObject } from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

type Rule = { to?: Array<{ ipBlock?: { cidr: string } }>; ports?: Array<{ port?: number }> };
const runnerEgress = (objects: KubeObject[]) =>
  (find(objects, 'NetworkPolicy', 'tether-runner') as unknown as { spec: { egress: Rule[] } }).spec.egress;
const RELEASE = { release: 'tether', namespace: 'agents' };
const PRIVATE = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10'];

describe('the runner Pod (and so the agent) with the egress proxy on', () => {
  it('has no port 53 of its own: names are the proxy’s to resolve', async () => {
    const objects = await render(
      { networkPolicy: { apiServer: { cidrs: ['203.0.113.10/32'], ports: [443] } } },
      RELEASE,
    );
    const dns = runnerEgress(objects).filter((rule) => rule.ports?.some((p) => p.port === 53));
    expect(dns).toEqual([]);
  });

  // No rule can allow the API server without its address and still keep the cluster's Pods out:
  // the render stops instead, naming the value (helm template's tests give it: REQUIRED_VALUES).
  it('opens no private range when the API server addresses are unknown (helm template, GitOps)', async () => {
    const message = await renderError({ networkPolicy: { apiServer: { cidrs: [] } } }, RELEASE);
    expect(message).toContain('networkPolicy.apiServer.cidrs is required');
    const given = await render({}, RELEASE);
    const cidrs = runnerEgress(given).flatMap((rule) => (rule.to ?? []).map((to) => to.ipBlock?.cidr));
    expect(cidrs.filter((cidr) => cidr && PRIVATE.includes(cidr))).toEqual([]);
  });
});
