// The Session CRD on a real kube-apiserver: installs, validates, status subresource, kubectl columns.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiError } from '../../common/kube/errors.ts';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { formatDuration, maskPhone, previewPrompt } from '../../common/session/display.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import { GROUP, LIMITS, PLURAL, VERSION, type SessionSpec } from '../../common/session/schema.ts';
import {
  adminKubeConfig,
  createNamespace,
  deleteNamespace,
  installSessionCrd,
  kubectl,
  sessionClient,
} from '../support/cluster.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+14155550123';
const validSpec = (): SessionSpec => ({
  phone,
  prompt: 'make the navbar sticky and add a dark-mode toggle',
  repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
  workspace: workspaceName(testPhoneHash(phone)),
});

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let raw: CustomObjectsApi;

beforeAll(async () => {
  kc = adminKubeConfig();
  const crd = await installSessionCrd(kc);
  expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
  ns = await createNamespace(kc, 'crd');
  sessions = sessionClient(kc);
  raw = kc.makeApiClient(CustomObjectsApi);
});
afterAll(async () => deleteNamespace(kc, ns));

/** Splits kubectl's table by the header's column starts, so empty cells stay in place. */
function parseTable(out: string): { header: string[]; rows: string[][] } {
  const [head, ...lines] = out.trimEnd().split('\n');
  const starts = [...head!.matchAll(/\S+/g)].map((m) => m.index);
  const cut = (line: string) =>
    starts.map((start, i) =>
      [...line]
        .slice(start, starts[i + 1])
        .join('')
        .trim(),
    );
  return { header: cut(head!), rows: lines.map(cut) };
}

async function rejection(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'the API server accepted an invalid Session').toBeDefined();
  const info = apiError(error);
  expect(info?.code).toBe(422);
  return info!.message;
}

describe('Session CRD on a real API server', () => {
  it('accepts a valid Session and applies defaults', async () => {
    const created = await sessions.create(ns, sessionName(testPhoneHash(phone)), validSpec());
    expect(created.spec.phone).toBe(phone);
    expect(created.spec.timeouts).toBeUndefined();
    expect(created.spec.cancel).toBe(false);
    const withTimeouts = await sessions.create(ns, sessionName(testPhoneHash(phone)), { ...validSpec(), timeouts: {} });
    expect(withTimeouts.spec.timeouts).toEqual({ run: '60m', approval: '30m' });
  });

  it.each([
    ['bad phone', { phone: '4155550123' }, 'spec.phone'],
    ['phone with letters', { phone: '+1415555abcd' }, 'spec.phone'],
    ['missing prompt', { prompt: undefined }, 'spec.prompt'],
    ['empty prompt', { prompt: '' }, 'spec.prompt'],
    ['oversize prompt', { prompt: 'x'.repeat(8193) }, 'spec.prompt'],
    ['bad workspace name', { workspace: 'WS_1' }, 'spec.workspace'],
    ['bad timeout', { timeouts: { run: '1 hour' } }, 'spec.timeouts.run'],
    [
      'unknown decision action',
      { decisions: [{ requestId: 'r1', action: 'maybe', at: '2026-11-22T08:00:00Z' }] },
      'spec.decisions[0].action',
    ],
    [
      'decision without requestId',
      { decisions: [{ action: 'approve', at: '2026-11-22T08:00:00Z' }] },
      'spec.decisions[0].requestId',
    ],
    ['missing repo', { repo: undefined }, 'spec.repo'],
    [
      'an --upload-pack base branch',
      { repo: { url: 'https://github.com/acme/web.git', baseBranch: '--upload-pack=touch /tmp/x' } },
      'spec.repo.baseBranch',
    ],
    [
      'a base branch with ..',
      { repo: { url: 'https://github.com/acme/web.git', baseBranch: 'a..b' } },
      'spec.repo.baseBranch',
    ],
    [
      'a base branch with @{',
      { repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main@{1}' } },
      'spec.repo.baseBranch',
    ],
    [
      'a base branch with a control character',
      { repo: { url: 'https://github.com/acme/web.git', baseBranch: 'ma\u0001in' } },
      'spec.repo.baseBranch',
    ],
    ['an option as repo URL', { repo: { url: '--upload-pack=touch /tmp/x' } }, 'spec.repo.url'],
    ['an ssh repo URL', { repo: { url: 'git@github.com:acme/web.git' } }, 'spec.repo.url'],
    ['a repo URL with credentials', { repo: { url: 'https://github.com@evil.example/acme/web.git' } }, 'spec.repo.url'],
    ['an ext:: transport', { repo: { url: 'ext::sh -c touch% /tmp/x' } }, 'spec.repo.url'],
    ['an option as resume id', { resumeAgentSession: '--fork-session' }, 'spec.resumeAgentSession'],
  ])('rejects a Session with %s', async (_label, change, field) => {
    const spec = { ...validSpec(), ...change } as SessionSpec;
    const message = await rejection(sessions.create(ns, sessionName(testPhoneHash(phone)), spec));
    expect(message).toContain(field);
  });

  it(`accepts the repository forms the components accept: https, \
loopback http, a local path, a nested branch`, async () => {
    for (const repo of [
      { url: 'https://git.example.com:8443/team/app.git', baseBranch: 'release/1.2' },
      { url: 'http://127.0.0.1:9418/acme/web.git', baseBranch: 'feature/JIRA-42_fix' },
      { url: '/srv/git/.state/acme/web.git' },
    ])
      expect(
        (await sessions.create(ns, sessionName(testPhoneHash(phone)), { ...validSpec(), repo })).spec.repo.url,
      ).toBe(repo.url);
  });

  it('rejects an unknown phase in status, naming status.phase', async () => {
    const name = sessionName(testPhoneHash(phone));
    await sessions.create(ns, name, validSpec());
    const message = await rejection(sessions.patchStatus(ns, name, { phase: 'Dancing' } as never));
    expect(message).toContain('status.phase');
    const ok = await sessions.patchStatus(ns, name, { phase: 'Queued' });
    expect(ok.status?.phase).toBe('Queued');
  });

  it('keeps phone, prompt and workspace immutable and decisions append-only', async () => {
    const name = sessionName(testPhoneHash(phone));
    await sessions.create(ns, name, {
      ...validSpec(),
      decisions: [{ requestId: 'r1', action: 'allow', at: '2026-11-22T08:00:00Z' }],
    });
    expect(await rejection(sessions.patch(ns, name, { spec: { prompt: 'something else' } }))).toContain(
      'prompt is immutable',
    );
    expect(await rejection(sessions.patch(ns, name, { spec: { phone: '+14155550999' } }))).toContain(
      'phone is immutable',
    );
    expect(await rejection(sessions.patch(ns, name, { spec: { decisions: [] } }))).toContain('append-only');
    const appended = await sessions.patch(ns, name, {
      spec: {
        decisions: [
          { requestId: 'r1', action: 'allow', at: '2026-11-22T08:00:00Z' },
          { requestId: 'r2', action: 'deny', message: 'no network', at: '2026-11-22T08:01:00Z' },
        ],
      },
    });
    expect(appended.spec.decisions).toHaveLength(2);
  });

  it('keeps spec.images immutable, bounded and of the image types the agent accepts', async () => {
    const name = sessionName(testPhoneHash(phone));
    const image = (n: number, contentType = 'image/jpeg') => ({
      ref: `${ns}/${name}/photo-${n}.jpg`,
      contentType: contentType as 'image/jpeg',
      bytes: 1000,
    });
    expect(
      await rejection(
        sessions.create(ns, name, {
          ...validSpec(),
          images: Array.from({ length: LIMITS.images + 1 }, (_, i) => image(i)),
        } as never),
      ),
    ).toContain('spec.images');
    expect(
      await rejection(sessions.create(ns, name, { ...validSpec(), images: [image(1, 'application/pdf')] } as never)),
    ).toContain('spec.images[0].contentType');
    expect(
      await rejection(
        sessions.create(ns, name, { ...validSpec(), images: [{ ...image(1), bytes: LIMITS.imageBytes + 1 }] } as never),
      ),
    ).toContain('spec.images[0].bytes');
    await sessions.create(ns, name, { ...validSpec(), images: [image(1)] });
    expect(await rejection(sessions.patch(ns, name, { spec: { images: [image(1), image(2)] } }))).toContain(
      'images are immutable',
    );
  });

  it('keeps spec.costPauseUsd as created: not changed, added or removed', async () => {
    const paused = sessionName(testPhoneHash(phone));
    await sessions.create(ns, paused, { ...validSpec(), costPauseUsd: 2 });
    expect(await rejection(sessions.patch(ns, paused, { spec: { costPauseUsd: 500 } }))).toContain(
      'costPauseUsd is immutable',
    );
    expect(await rejection(sessions.patch(ns, paused, { spec: { costPauseUsd: null } } as never))).toContain(
      'costPauseUsd is immutable',
    );
    const plain = sessionName(testPhoneHash(phone));
    await sessions.create(ns, plain, validSpec());
    expect(await rejection(sessions.patch(ns, plain, { spec: { costPauseUsd: 0 } }))).toContain(
      'costPauseUsd is immutable',
    );
    expect((await sessions.patch(ns, paused, { spec: { cancel: true } })).spec).toMatchObject({
      cancel: true,
      costPauseUsd: 2,
    });
  });

  it('changes status only through the status subresource', async () => {
    const name = sessionName(testPhoneHash(phone));
    await sessions.create(ns, name, validSpec());
    const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const viaMain = (await raw.patchNamespacedCustomObject(
      { group: GROUP, version: VERSION, plural: PLURAL, namespace: ns, name, body: { status: { phase: 'Succeeded' } } },
      mergePatch,
    )) as { status?: unknown };
    expect(viaMain.status).toBeUndefined();
    expect((await sessions.get(ns, name))?.status).toBeUndefined();

    const viaStatus = await sessions.patchStatus(ns, name, { phase: 'Working' });
    expect(viaStatus.status?.phase).toBe('Working');
    const specUnchanged = (await raw.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, plural: PLURAL, namespace: ns, name, body: { spec: { cancel: true } } },
      mergePatch,
    )) as { spec: SessionSpec };
    expect(specUnchanged.spec.cancel).toBe(false);
  });

  it(`shows NAME, PHONE, PHASE, WAITING-ON and AGE in kubectl get sessions (within 100 columns); PROMPT, DURATION, \
COST and PR with -o wide`, async () => {
    const columnsNs = await createNamespace(kc, 'cols');
    const waiting = sessionName(testPhoneHash(phone), new Date(), 'aaaa');
    const done = sessionName(testPhoneHash(phone), new Date(), 'bbbb');
    const spec = validSpec();
    await sessions.create(columnsNs, waiting, spec);
    await sessions.create(columnsNs, done, { ...spec, prompt: 'fix the login redirect loop on Safari' });
    const display = { phone: maskPhone(phone), prompt: previewPrompt(spec.prompt) };
    await sessions.patchStatus(columnsNs, waiting, {
      phase: 'AwaitingApproval',
      display,
      pending: { id: 'p1', kind: 'changes', summary: '3 files changed', createdAt: new Date().toISOString() },
    });
    await sessions.patchStatus(columnsNs, done, {
      phase: 'Succeeded',
      display: {
        phone: maskPhone(phone),
        prompt: previewPrompt('fix the login redirect loop on Safari'),
        duration: formatDuration(192_000),
      },
      result: { costUsd: 0.41, prUrl: 'https://github.com/acme/web/pull/412' },
    });

    const narrow = await kubectl(['get', 'sess', '-n', columnsNs]);
    const narrowTable = parseTable(narrow);
    expect(narrowTable.header).toEqual(['NAME', 'PHONE', 'PHASE', 'WAITING-ON', 'AGE']);
    expect(narrowTable.rows.find((r) => r[0] === waiting)).toEqual([
      waiting,
      '+1415•••0123',
      'AwaitingApproval',
      'changes',
      expect.stringMatching(/^\d+s$/),
    ]);
    for (const line of narrow.trimEnd().split('\n')) expect([...line].length, line).toBeLessThanOrEqual(100);

    const out = await kubectl(['get', 'sess', '-n', columnsNs, '-o', 'wide']);
    const table = parseTable(out);
    expect(table.header).toEqual(['NAME', 'PHONE', 'PHASE', 'WAITING-ON', 'AGE', 'PROMPT', 'DURATION', 'COST', 'PR']);
    const row = (name: string) => table.rows.find((r) => r[0] === name);
    expect(row(waiting)).toEqual([
      waiting,
      '+1415•••0123',
      'AwaitingApproval',
      'changes',
      expect.stringMatching(/^\d+s$/),
      'make the navbar sticky and add a dark-m…',
      '',
      '',
      '',
    ]);
    expect(row(done)).toEqual([
      done,
      '+1415•••0123',
      'Succeeded',
      '',
      expect.stringMatching(/^\d+s$/),
      'fix the login redirect loop on Safari',
      '3m12s',
      '0.41',
      'https://github.com/acme/web/pull/412',
    ]);
    expect(out).not.toContain('4155550123');
    console.log(`kubectl get sessions -n ${columnsNs}\n${narrow}\nkubectl get sessions -o wide\n${out}`);
    await deleteNamespace(kc, columnsNs);
  });
});
