// The chart's install-path values fail early and loudly: publicUrl required, the Ingress host taken
// from it, dollar values as numbers or strings, phone numbers that --set turns into numbers refused
// with the fix; chart-made Secrets checksummed into the relay; every schema node described.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CHART_DIR,
  HELM_SETUP_TIMEOUT,
  find,
  helmBin,
  podTemplate,
  render,
  renderError,
  type KubeObject,
} from './chart-render.ts';

const runNode = promisify(execFile);
beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const data = (objects: KubeObject[], suffix: string) =>
  (find(objects, 'ConfigMap', suffix) as unknown as { data: Record<string, string> }).data;
type IngressSpec = { spec: { tls: { hosts: string[] }[]; rules: { host: string }[] } };

describe('relay.publicUrl and the Ingress host', () => {
  it('refuses an install without relay.publicUrl, naming it', async () => {
    expect(await renderError({}, { bare: true })).toContain('relay.publicUrl is required');
  });

  it("serves publicUrl's host (lower case, without the port) when relay.ingress.host is empty", async () => {
    const objects = await render({
      relay: { publicUrl: 'https://Wa.Example.org:8443/t', ingress: { enabled: true, tlsSecretName: 'wa-tls' } },
    });
    const ingress = find(objects, 'Ingress', 'relay') as unknown as IngressSpec;
    expect(ingress.spec.rules.map((r) => r.host)).toEqual(['wa.example.org']);
    expect(ingress.spec.tls[0]!.hosts).toEqual(['wa.example.org']);
  });

  it.each([
    [{ relay: { ingress: { host: 'other.example.com' } } }, 'relay.ingress.host "other.example.com" is not the host'],
    [{ relay: { publicUrl: 'http://127.0.0.1:8080', ingress: { enabled: true } } }, 'needs a host name'],
  ])('refuses %j at render', async (values, message) => {
    expect(await renderError(values)).toContain(message);
  });
});

describe('dollar values', () => {
  const budgets = async (values: object, extraArgs: string[] = []) => {
    const objects = await render(values, { extraArgs });
    return [
      data(objects, 'relay').TETHER_DAILY_BUDGET_USD,
      data(objects, 'controller').TETHER_DAILY_BUDGET_USD,
      data(objects, 'relay').RELAY_RUN_PAUSE_USD,
    ];
  };

  it('takes --set relay.dailyBudgetUsd=25 (a number to helm) to the relay and the controller as "25"', async () => {
    expect(await budgets({}, ['--set', 'relay.dailyBudgetUsd=25', '--set', 'relay.runPauseUsd=2.5'])).toEqual([
      '25',
      '25',
      '2.5',
    ]);
  });

  it.each([
    [100000, 0.5, ['100000', '100000', '0.5']],
    ['12.50', '0', ['12.50', '12.50', '0']],
  ])('writes %j and %j from a values file as the decimal text', async (daily, pause, expected) => {
    expect(await budgets({ relay: { dailyBudgetUsd: daily, runPauseUsd: pause } })).toEqual(expected);
  });

  it('refuses more than two decimals and negative amounts, naming the value', async () => {
    expect(await renderError({ relay: { runPauseUsd: 2.555 } })).toContain(
      'relay.runPauseUsd must be US dollars with at most 6 digits and 2 decimals',
    );
    expect(await renderError({ relay: { dailyBudgetUsd: -1 } })).toContain('/relay/dailyBudgetUsd');
  });
});

describe('phone numbers on the command line', () => {
  it('--set-string keeps the + of each number', async () => {
    const objects = await render(
      {},
      { extraArgs: ['--set-string', 'relay.allowedNumbers={+14155550123,+447700900123}'] },
    );
    expect(data(objects, 'relay').ALLOWED_NUMBERS).toBe('+14155550123,+447700900123');
  });

  it.each([['relay.allowedNumbers={+14155550123}'], ['relay.allowedNumbers[0]=+14155550123']])(
    '--set %s (a number to helm) is refused with the --set-string fix',
    async (set) => {
      const message = await renderText({}, ['--set', set]);
      expect(message).toContain('relay.allowedNumbers[0] is the number 14155550123, not a string');
      expect(message).toContain("--set-string 'relay.allowedNumbers={+14155550123}'");
    },
  );
});

/** The rendering error of `extraArgs` over the required values. */
async function renderText(values: object, extraArgs: string[]): Promise<string> {
  return render(values, { extraArgs }).then(
    () => 'rendered',
    (error: Error) => error.message,
  );
}

describe('Secret rotation restarts the relay', () => {
  const twilio = (authToken: string, mediaSigningKey = 'k'.repeat(40)) => ({
    // Every relay key given: a generated one would differ between two renders.
    secrets: {
      twilio: { accountSid: `AC${'0'.repeat(32)}`, authToken },
      relay: { mediaSigningKey, phoneHashKey: 'p'.repeat(40) },
    },
    relay: { twilio: { whatsappFrom: 'whatsapp:+14155238886' } },
  });
  const relayTemplate = async (values: object) => podTemplate(find(await render(values), 'Deployment', 'relay'));

  it("changes the relay's Pod template with the Twilio token or the relay key, and only then", async () => {
    const [first, same, rotated, rekeyed] = await Promise.all([
      relayTemplate(twilio('token-1')),
      relayTemplate(twilio('token-1')),
      relayTemplate(twilio('token-2')),
      relayTemplate(twilio('token-1', 'm'.repeat(40))),
    ]);
    expect(same).toEqual(first);
    expect(rotated).not.toEqual(first);
    expect(rekeyed).not.toEqual(first);
    expect(rotated.metadata).not.toEqual(first.metadata);
  });
});

describe('uninstall and the runner namespace', () => {
  it('keeps the chart-made runner namespace on helm uninstall', async () => {
    const namespace = find(await render(), 'Namespace', '-runners');
    expect(namespace.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
  });
});

describe('helm test: the runner Secret holds the model key', () => {
  let hook: KubeObject;
  beforeAll(async () => {
    hook = find(
      await render({ secrets: { runner: { existingSecret: 'my-runner' } } }, { namespace: 'agents' }),
      'Pod',
      'runner-secret-test',
    );
  });
  const container = () =>
    (hook as unknown as { spec: { containers: { command: string[]; args: string[]; env: object[] }[] } }).spec
      .containers[0]!;
  const run = (env: Record<string, string>) =>
    runNode(process.execPath, [container().command[1]!, container().args[0]!], {
      env: { PATH: process.env.PATH, SECRET: 'my-runner', NAMESPACE: 'agents-runners', ...env },
    }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
    );

  it("runs in the runner namespace and reads the runner Secret's two keys, optional", () => {
    expect(hook.metadata).toMatchObject({ namespace: 'agents-runners', annotations: { 'helm.sh/hook': 'test' } });
    expect(container().env).toContainEqual({
      name: 'ANTHROPIC_API_KEY',
      valueFrom: { secretKeyRef: { name: 'my-runner', key: 'ANTHROPIC_API_KEY', optional: true } },
    });
  });

  it('fails without ANTHROPIC_API_KEY, naming the Secret, and passes with it without printing it', async () => {
    const missing = await run({});
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(
      'ANTHROPIC_API_KEY: missing from the runner Secret my-runner in namespace agents-runners',
    );
    const present = await run({ ANTHROPIC_API_KEY: 'sk-test-secret', GITHUB_TOKEN: 'ghp-secret' });
    expect(present).toEqual({ code: 0, stdout: 'GITHUB_TOKEN: set\nANTHROPIC_API_KEY: set\n' });
  });
});

describe('values.schema.json', () => {
  type SchemaNode = Record<string, unknown>;
  /** Every schema node (properties, items, additionalProperties, anyOf members) without a description. */
  function undescribed(node: SchemaNode, path: string): string[] {
    const own = typeof node.description === 'string' && node.description.trim() ? [] : [path || '/'];
    const children: [string, SchemaNode][] = [
      ...Object.entries((node.properties ?? {}) as Record<string, SchemaNode>).map(([k, v]): [string, SchemaNode] => [
        `${path}/${k}`,
        v,
      ]),
      ...(['items', 'additionalProperties'] as const)
        .filter((k) => typeof node[k] === 'object' && node[k] !== null)
        .map((k): [string, SchemaNode] => [`${path}/${k}`, node[k] as SchemaNode]),
      ...(['anyOf', 'oneOf', 'allOf'] as const).flatMap((k) =>
        ((node[k] ?? []) as SchemaNode[]).map((v, i): [string, SchemaNode] => [`${path}/${k}/${i}`, v]),
      ),
    ];
    return [...own, ...children.flatMap(([p, child]) => undescribed(child, p))];
  }

  it('describes every node', () => {
    const schema = JSON.parse(readFileSync(`${CHART_DIR}/values.schema.json`, 'utf8')) as SchemaNode;
    expect(undescribed(schema, '')).toEqual([]);
  });

  it('finds a node without a description (the walk reaches nested members)', () => {
    const node = { description: 'd', properties: { a: { description: 'd', anyOf: [{ type: 'string' }] } } };
    expect(undescribed(node, '')).toEqual(['/a/anyOf/0']);
  });
});
