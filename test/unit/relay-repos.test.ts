// Several repositories: the install's list (config), workspace names, and what a phone's commands
// create with `@name`, `repo name` and a plain command (in-memory Sessions, the real handler).
import { pino } from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import { workspaceRepoOf, LABEL_REPO, workspaceName } from '../../common/session/names.ts';
import { specProblem } from '../../controller/decide.ts';
import { ConfigError, loadConfig } from '../../relay/config.ts';
import type { InboundHandler } from '../../relay/inbound/handler.ts';
import { MemoryRepoChoices } from '../../relay/inbound/repo-choices.ts';
import { PhoneRepos } from '../../relay/inbound/phone-repos.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { nameFromUrl, type NamedRepo } from '../../relay/repo-list.ts';
import { WebChat } from '../../relay/transports/web.ts';
import { chatHandler } from '../support/chat-handler.ts';
import { MemorySessions } from '../support/memory-sessions.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const base = {
  PUBLIC_URL: 'https://tether.example.com',
  TETHER_REPO_URL: 'https://github.com/acme/Sample.git',
  RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(32),
  TETHER_PHONE_HASH_KEY: 'h'.repeat(32),
  RELAY_WEB_CHAT_TOKEN: 't'.repeat(20),
};

describe("the install's repositories (relay config)", () => {
  it('one repository by default, named by its last path segment; TETHER_REPOS adds named ones', () => {
    expect(loadConfig(base).repos).toEqual([
      { name: 'sample', url: 'https://github.com/acme/Sample.git', baseBranch: 'main' },
    ]);
    expect(loadConfig({ ...base, TETHER_REPO_NAME: 'web' }).repos[0]!.name).toBe('web');
    const list = [
      { name: 'api', url: 'https://github.com/acme/api.git', baseBranch: 'dev' },
      { name: 'docs', url: '/srv/git/docs' },
    ];
    expect(
      loadConfig({ ...base, TETHER_REPOS: JSON.stringify(list), TETHER_REPO_HOSTS: 'github.com,/srv/git' }).repos.map(
        (r) => `${r.name} ${r.baseBranch}`,
      ),
    ).toEqual(['sample main', 'api dev', 'docs main']);
    expect([
      nameFromUrl('/srv/git/My Repo.git/'),
      nameFromUrl('https://h/x/___.git'),
      nameFromUrl(`https://h/${'a'.repeat(80)}`),
    ]).toEqual(['my-repo', 'default', 'a'.repeat(40)]);
  });

  it.each([
    ['not JSON', '[{name: web}]', /TETHER_REPOS: is not JSON/],
    [
      'a name that is no DNS label',
      [{ name: 'Web_App', url: 'https://github.com/a/b' }],
      /TETHER_REPOS: entry \/0\/name.*lowercase letters/,
    ],
    [
      'a name too long for a workspace',
      [{ name: 'a'.repeat(41), url: 'https://github.com/a/b' }],
      /TETHER_REPOS: entry \/0\/name/,
    ],
    ['a path in the name', [{ name: '../x', url: 'https://github.com/a/b' }], /TETHER_REPOS: entry \/0\/name/],
    [
      'a name used twice',
      [{ name: 'sample', url: 'https://github.com/a/b' }],
      /TETHER_REPOS: the name "sample" is given twice/,
    ],
    ['an ssh URL', [{ name: 'web', url: 'git@github.com:a/b.git' }], /TETHER_REPOS: entry \/0\/url/],
    [
      'an option as branch',
      [{ name: 'web', url: 'https://github.com/a/b', baseBranch: '--upload-pack=x' }],
      /TETHER_REPOS: entry \/0\/baseBranch/,
    ],
    ['an unknown field', [{ name: 'web', url: 'https://github.com/a/b', token: 'x' }], /TETHER_REPOS: entry \/0/],
  ])('refuses %s, naming TETHER_REPOS', (_what, list, message) => {
    const attempt = () => loadConfig({ ...base, TETHER_REPOS: typeof list === 'string' ? list : JSON.stringify(list) });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(message);
  });

  it("reads the controller's repository host list (github.com unless TETHER_REPO_HOSTS says otherwise)", () => {
    expect(loadConfig(base).repoHosts).toEqual(['github.com']);
    expect(loadConfig({ ...base, TETHER_REPO_HOSTS: 'github.com, /srv/git' }).repoHosts).toEqual([
      'github.com',
      '/srv/git',
    ]);
    expect(() => loadConfig({ ...base, TETHER_REPO_HOSTS: 'ssh://github.com' })).toThrow(
      /^TETHER_REPO_HOSTS: "ssh:\/\/github.com" is not a host/,
    );
  });

  it.each([
    [
      'a second repository in a folder the list does not name',
      { TETHER_REPOS: JSON.stringify([{ name: 'widgets', url: '/srv/git/widgets.git' }]) },
      /^TETHER_REPOS: "widgets" \(\/srv\/git\/widgets\.git\) is not on TETHER_REPO_HOSTS \(github\.com\)/,
    ],
    [
      'a second repository on another host',
      {
        TETHER_REPOS: JSON.stringify([{ name: 'api', url: 'https://git.example.com/acme/api.git' }]),
        TETHER_REPO_HOSTS: 'github.com,/srv/git',
      },
      new RegExp(
        /^TETHER_REPOS: "api" \(https:\/\/git\.example\.com\/acme\/api\.git\) /.source +
          /is not on TETHER_REPO_HOSTS \(github\.com, \/srv\/git\)/.source,
      ),
    ],
    [
      'a default repository on another port',
      { TETHER_REPO_URL: 'https://github.com:8443/acme/web.git' },
      /^TETHER_REPO_URL: "web" \(https:\/\/github\.com:8443\/acme\/web\.git\) is not on TETHER_REPO_HOSTS/,
    ],
  ])('refuses to start with %s: the controller would refuse its Sessions', (_what, env, message) => {
    const attempt = () => loadConfig({ ...base, ...env });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(message);
    expect(attempt).toThrow(/add its host or folder to TETHER_REPO_HOSTS/);
  });

  it('refuses a TETHER_REPO_NAME that is no DNS label', () => {
    expect(() => loadConfig({ ...base, TETHER_REPO_NAME: 'my web' })).toThrow(/^TETHER_REPO_NAME: /);
  });
});

describe('workspace names', () => {
  const phone = '+14155550123';
  it(`keeps ws-<phonehash> for the default repository; another one is ws-<phonehash>-<name>, a DNS label even at the \
longest name`, () => {
    expect(workspaceName(testPhoneHash(phone))).toBe(`ws-${testPhoneHash(phone)}`);
    const longest = workspaceName(testPhoneHash(phone), 'a'.repeat(40));
    expect(longest.length).toBeLessThanOrEqual(63);
    expect(longest).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  it("the controller takes any of the phone's workspaces and no other phone's", () => {
    const spec = (workspace: string) =>
      ({
        apiVersion: 'tether.dev/v1alpha1',
        kind: 'Session',
        metadata: { name: 's' },
        spec: { phone, prompt: 'p', repo: { url: 'https://github.com/acme/web.git' }, workspace },
      }) as const;
    expect(
      specProblem(spec(workspaceName(testPhoneHash(phone), 'web')), ['github.com'], testPhoneHash),
    ).toBeUndefined();
    expect(
      specProblem(spec(workspaceName(testPhoneHash('+14155550124'), 'web')), ['github.com'], testPhoneHash),
    ).toMatch(/not this phone's workspace/);
    expect(workspaceRepoOf(testPhoneHash(phone), `${workspaceName(testPhoneHash(phone))}-`)).toBeUndefined();
    expect(workspaceRepoOf(testPhoneHash(phone), `${workspaceName(testPhoneHash(phone))}web`)).toBeUndefined();
  });
});

describe('commands with several repositories', () => {
  const phone = '+15555550100';
  const repos: NamedRepo[] = [
    { name: 'sample', url: 'https://github.com/acme/sample.git', baseBranch: 'main' },
    { name: 'web', url: 'https://github.com/acme/web.git', baseBranch: 'dev' },
  ];
  let store: MemorySessions;
  let chat: WebChat;
  let choices: MemoryRepoChoices;
  let handler: InboundHandler;
  const say = (body: string) => handler.accept({ id: `web-${Math.random()}`, from: phone, body, transport: 'web' });
  const lastReply = () =>
    chat
      .entries()
      .filter((e) => e.from === 'bot')
      .at(-1)!.text;
  const finish = async (agentSessionId: string) => {
    const s = store.list().at(-1)!;
    await store.patchStatus('ns', s.metadata.name!, { phase: 'Succeeded', result: { agentSessionId } });
  };

  beforeEach(() => {
    store = new MemorySessions('ns');
    chat = new WebChat({ phone, token: 't'.repeat(20) });
    choices = new MemoryRepoChoices();
    const logger = pino({ level: 'silent' });
    const metrics = createMetrics();
    handler = chatHandler(
      { store, chat, metrics, logger },
      { repo: repos[0]!, repos: new PhoneRepos(repos, choices, testPhoneHash) },
    );
  });

  it(`@name works in that repository and its own workspace; \
a conversation is continued only in its own repository`, async () => {
    await say('fix the footer');
    await finish('conv-sample');
    expect(await say('@web plan: fix the navbar')).toBe('start');
    const web = store.list().at(-1)!;
    expect(web.spec).toMatchObject({
      prompt: 'fix the navbar',
      mode: 'plan',
      repo: { url: repos[1]!.url, baseBranch: 'dev' },
      workspace: workspaceName(testPhoneHash(phone), 'web'),
    });
    expect(web.spec.resumeAgentSession).toBeUndefined();
    expect(web.metadata.labels?.[LABEL_REPO]).toBe('web');
    expect(lastReply()).toMatch(/^On it \(session [0-9a-f]{4}\) in \*web\*\. The plan comes first/);
    await finish('conv-web');
    await say('and the header');
    expect(store.list().at(-1)!.spec).toMatchObject({
      workspace: workspaceName(testPhoneHash(phone)),
      resumeAgentSession: 'conv-sample',
    });
    await finish('conv-sample-2');
    await say('@web and the menu');
    expect(store.list().at(-1)!.spec).toMatchObject({
      workspace: workspaceName(testPhoneHash(phone), 'web'),
      resumeAgentSession: 'conv-web',
    });
  });

  it(`repo <name> sets the default (kept in the choices \
store); repo lists; an unknown name gets the list back`, async () => {
    await say('repo');
    expect(lastReply()).toBe(
      'The repositories here:\n• sample (your default)\n• web\nReply *repo <name>* to change your default, or start ' +
        'a command with *@name*.',
    );
    await say('repo Web');
    expect(lastReply()).toMatch(/now work on \*web\*/);
    expect(await choices.get(phone)).toBe('web');
    await say('tidy up');
    expect(store.list().at(-1)!.spec.workspace).toBe(workspaceName(testPhoneHash(phone), 'web'));
    await say('@../../etc\u202e fix');
    expect(lastReply()).toMatch(
      /^There is no repository named "\.\.\?\.\.\?etc\?"\. The repositories here:\n• sample\n• web \(your default\)/,
    );
    await say(`repo ${'x'.repeat(500)}`);
    expect(lastReply()).toMatch(new RegExp(`^There is no repository named "${'x'.repeat(30)}…"`));
    expect(store.list()).toHaveLength(1);
  });

  it('help and status show the repositories and the default', async () => {
    await say('help');
    expect(lastReply()).toContain('Repositories: *sample* (your default), web');
    expect(lastReply()).toContain('*plan: <command>*');
    await say('@web x');
    await say('status');
    expect(lastReply()).toMatch(
      /^Session [0-9a-f]{4} \(web\) · Queued.*\nRepositories: \*sample\* \(your default\), web$/,
    );
  });
});
