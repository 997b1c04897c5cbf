// The install's runner settings (chart runner.*), from the controller's variables through the pure
// Pod builder: the whole Pod compared with the default one plus exactly the configured changes.
import { describe, expect, it } from 'vitest';
import { desiredPod } from '../../controller/builders.ts';
import { ConfigError, loadConfig } from '../../controller/config.ts';
import { testSession } from './controller-fixtures.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';

const session = testSession({ name: 'abc-20261122083000-k3x9', uid: 'uid-1' });
const BASE = {
  TETHER_RUNNER_IMAGE: 'tether-runner:test',
  POD_NAME: 'ctl-0',
  TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
};
const tolerations = [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }];
const spread = [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }];
const affinity = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['agents'] }] }],
    },
  },
};
const SETTINGS = {
  TETHER_RUNNER_CLAUDE_MODEL: 'claude-opus-4-1',
  TETHER_RUNNER_ANTHROPIC_BASE_URL: 'https://gateway.example/anthropic',
  TETHER_RUNNER_HTTPS_PROXY: 'http://proxy.example:3128',
  TETHER_RUNNER_HTTP_PROXY: 'http://proxy.example:3128',
  TETHER_RUNNER_NO_PROXY: 'git.internal,tether-relay.tether.svc,127.0.0.1,localhost',
  TETHER_RUNNER_PRIORITY_CLASS: 'agents',
  TETHER_RUNNER_NODE_SELECTOR: '{"pool":"agents"}',
  TETHER_RUNNER_TOLERATIONS: JSON.stringify(tolerations),
  TETHER_RUNNER_AFFINITY: JSON.stringify(affinity),
  TETHER_RUNNER_TOPOLOGY_SPREAD: JSON.stringify(spread),
  TETHER_RUNNER_POD_LABELS: '{"team":"web","cost-center":"42"}',
  TETHER_RUNNER_UID: '1000680000',
  TETHER_RUNNER_AGENT_UID: '1000680001',
  TETHER_RUNNER_GID: '1000680000',
};

describe('runner settings through the controller', () => {
  it('builds the default Pod plus exactly the configured model, proxy, scheduling, labels and uids', () => {
    const expected = desiredPod(session, loadConfig(BASE));
    expected.metadata!.labels = { team: 'web', 'cost-center': '42', ...expected.metadata!.labels };
    const ids = { runAsUser: 1000680000, runAsGroup: 1000680000 };
    expected.spec = {
      ...expected.spec!,
      priorityClassName: 'agents',
      nodeSelector: { pool: 'agents' },
      tolerations,
      affinity,
      topologySpreadConstraints: spread,
      securityContext: { ...expected.spec!.securityContext, ...ids, fsGroup: 1000680000 },
    } as typeof expected.spec;
    const [agent] = expected.spec!.initContainers!;
    const [runner] = expected.spec!.containers;
    agent!.securityContext = { ...agent!.securityContext, runAsUser: 1000680001, runAsGroup: 1000680000 };
    runner!.securityContext = { ...runner!.securityContext, ...ids };
    const secrets = runner!.env!.findIndex((e) => e.valueFrom?.secretKeyRef);
    runner!.env!.splice(
      secrets,
      0,
      { name: 'TETHER_CLAUDE_MODEL', value: 'claude-opus-4-1' },
      { name: 'ANTHROPIC_BASE_URL', value: 'https://gateway.example/anthropic' },
      { name: 'HTTPS_PROXY', value: 'http://proxy.example:3128' },
      { name: 'HTTP_PROXY', value: 'http://proxy.example:3128' },
      { name: 'NO_PROXY', value: 'git.internal,tether-relay.tether.svc,127.0.0.1,localhost' },
      { name: 'NODE_USE_ENV_PROXY', value: '1' },
    );

    const pod = desiredPod(session, loadConfig({ ...BASE, ...SETTINGS }));
    // The settings are in the runner key: a live Pod of other settings takes no Session.
    const key = 'tether.dev/runner-key';
    expect(pod.metadata!.annotations![key]).not.toBe(expected.metadata!.annotations![key]);
    expected.metadata!.annotations![key] = pod.metadata!.annotations![key]!;
    expect(pod).toEqual(expected);
    // The agent container gets none of them: Claude Code's environment is built by the supervisor.
    expect(pod.spec!.initContainers![0]!.env!.map((e) => e.name)).toEqual(['TETHER_AGENT_SOCKET', 'HOME', 'TMPDIR']);
  });

  it('sets no proxy switch without a proxy, and leaves empty JSON settings out', () => {
    const pod = desiredPod(
      session,
      loadConfig({
        ...BASE,
        TETHER_RUNNER_NO_PROXY: '.svc',
        TETHER_RUNNER_TOLERATIONS: '[]',
        TETHER_RUNNER_AFFINITY: '{}',
      }),
    );
    const env = pod.spec!.containers[0]!.env!;
    expect(env).toContainEqual({ name: 'NO_PROXY', value: '.svc' });
    expect(env.map((e) => e.name)).not.toContain('NODE_USE_ENV_PROXY');
    expect(pod.spec).not.toHaveProperty('tolerations');
    expect(pod.spec).not.toHaveProperty('affinity');
  });

  it.each([
    [{ TETHER_RUNNER_POD_LABELS: '{"app.kubernetes.io/component":"x"}' }, /TETHER_RUNNER_POD_LABELS.*Tether's own/],
    [{ TETHER_RUNNER_POD_LABELS: '{"tether.dev/session":"x"}' }, /TETHER_RUNNER_POD_LABELS.*Tether's own/],
    [{ TETHER_RUNNER_POD_LABELS: '{"team":"two words"}' }, /TETHER_RUNNER_POD_LABELS.*not a label value/],
    [{ TETHER_RUNNER_POD_LABELS: '{"-bad":"x"}' }, /TETHER_RUNNER_POD_LABELS.*not a label key/],
    [{ TETHER_RUNNER_TOLERATIONS: '{"key":"x"}' }, /TETHER_RUNNER_TOLERATIONS.*JSON list/],
    [{ TETHER_RUNNER_AFFINITY: '{nodeAffinity' }, /TETHER_RUNNER_AFFINITY.*not JSON/],
    [{ TETHER_RUNNER_AGENT_UID: '1000' }, /TETHER_RUNNER_AGENT_UID.*must differ/],
    [{ TETHER_RUNNER_UID: '0' }, /TETHER_RUNNER_UID/],
    [{ TETHER_RUNNER_ANTHROPIC_BASE_URL: 'gateway.example' }, /TETHER_RUNNER_ANTHROPIC_BASE_URL/],
    [{ TETHER_RUNNER_HTTPS_PROXY: 'proxy:3128' }, /TETHER_RUNNER_HTTPS_PROXY/],
    [{ TETHER_RUNNER_CLAUDE_MODEL: 'two words' }, /TETHER_RUNNER_CLAUDE_MODEL/],
  ])('refuses %j with a message naming the variable', (bad, message) => {
    expect(() => loadConfig({ ...BASE, ...bad })).toThrow(ConfigError);
    expect(() => loadConfig({ ...BASE, ...bad })).toThrow(message);
  });
});
