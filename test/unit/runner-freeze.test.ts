// The runner freezes the agent before it reads the checkout, wherever it reads it (a failed agent,
// the changes gate, a stop), and reads nothing when the freeze did not hold: the real Runner, Git
// and StatusWriter on an in-memory API server, an agent that edits the checkout, a recorded freeze.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { createLogger, makeRedactor } from '../../common/log.ts';
import { parseRepoHosts } from '../../common/session/repo.ts';
import type { Agent, AgentResult } from '../../runner-image/agents/types.ts';
import { Git } from '../../runner-image/git/store.ts';
import { Browsers } from '../../runner-image/pictures/chromium.ts';
import { parsePolicy } from '../../runner-image/policy.ts';
import { Runner } from '../../runner-image/runner.ts';
import { SNAPSHOT_LIMITS } from '../../runner-image/workspace/snapshot.ts';
import { StatusWriter } from '../../runner-image/status.ts';
import { MemorySessions } from '../support/memory-sessions.ts';

const log = createLogger({ component: 'test', level: 'silent' });
const author = { name: 'Tether', email: 'tether@example.com' };

function remote(): string {
  const root = mkdtempSync(join(tmpdir(), 'tether-freeze-order-'));
  const seed = join(root, 'seed');
  mkdirSync(seed);
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', seed, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
  git('init', '--quiet', '--initial-branch=main');
  writeFileSync(join(seed, 'README.md'), '# web\n');
  git('add', '-A');
  git('commit', '--quiet', '-m', 'base');
  execFileSync('git', ['clone', '--quiet', '--bare', seed, join(root, 'remote.git')]);
  return join(root, 'remote.git');
}

/** Runs one Session whose agent writes a file and ends with `result`; `freeze` plays the agent channel. */
async function runSession(result: AgentResult, freeze: () => Promise<{ lingering: number }>, limits = SNAPSHOT_LIMITS) {
  const order: string[] = [];
  const memory = new MemorySessions('ns');
  await memory.create('ns', 's', {
    phone: '+14155550123',
    prompt: 'p',
    repo: { url: remote(), baseBranch: 'main' },
    workspace: 'w',
  });
  await memory.patchStatus('ns', 's', { phase: 'Starting' });
  const status = new StatusWriter({
    sessions: memory as unknown as SessionClient,
    namespace: 'ns',
    name: 's',
    redact: makeRedactor(),
    log,
    batchMs: 0,
  });
  memory.onChange((_key, session) => session && status.noticed(session));
  const workspace = mkdtempSync(join(tmpdir(), 'tether-freeze-ws-'));
  class RecordingGit extends Git {
    override async changes() {
      order.push('snapshot');
      return super.changes();
    }
  }
  const agent: Agent = {
    name: 'claude',
    async run(options) {
      writeFileSync(join(options.cwd, 'new.txt'), 'written by the agent\n');
      order.push('agent');
      return result;
    },
  };
  const runner = new Runner({
    status,
    agent,
    log,
    redact: (s) => s,
    browsers: new Browsers(),
    policy: parsePolicy(undefined),
    git: new RecordingGit({
      workspace,
      checkout: 'repo',
      storeDir: mkdtempSync(join(tmpdir(), 'tether-freeze-store-')),
      author,
      redact: (s) => s,
      path: process.env.PATH!,
      limits,
    }),
    media: { dir: mkdtempSync(join(tmpdir(), 'tether-freeze-media-')), namespace: 'ns', session: 's' },
    workspace,
    repoDir: join(workspace, 'repo'),
    github: { apiUrl: 'http://127.0.0.1:9', token: () => undefined },
    repoHosts: parseRepoHosts(tmpdir()),
    now: () => new Date(),
    freezeAgent: async () => {
      order.push('freeze');
      return freeze();
    },
  });
  await runner.run();
  await status.flush();
  return { order, session: (await memory.get('ns', 's'))! };
}

const failed: AgentResult = { ok: false, message: 'The tests failed.', exitCode: 1 };
const finished: AgentResult = { ok: true, exitCode: 0 };

describe('the freeze before the snapshot', { timeout: 30_000 }, () => {
  it('a failed agent: frozen, then the changes read and recorded', async () => {
    const { order, session } = await runSession(failed, async () => ({ lingering: 0 }));
    expect(order).toEqual(['agent', 'freeze', 'snapshot']);
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result?.message).toBe('The tests failed.');
    expect(session.status?.result?.diff).toContain('+written by the agent');
  });

  it('processes that outlive the freeze: nothing is read and the Session says why', async () => {
    for (const result of [failed, finished]) {
      const { order, session } = await runSession(result, async () => ({ lingering: 2 }));
      expect(order).toEqual(['agent', 'freeze']);
      expect(session.status?.phase).toBe('Failed');
      expect(session.status?.result?.message).toContain(
        "Tether did not read the changes (2 of the agent's processes did not stop); they are kept on the workspace.",
      );
      expect(session.status?.result?.snapshotTree).toBeUndefined();
    }
  });

  it('a freeze that fails: nothing is read', async () => {
    const { order, session } = await runSession(finished, async () => {
      throw new Error('agent channel closed: the agent host disconnected');
    });
    expect(order).toEqual(['agent', 'freeze']);
    expect(session.status?.result?.message).toContain(
      "the agent's processes could not be stopped: agent channel closed",
    );
  });

  it('a checkout over the limits: the Session fails and says which', async () => {
    const { session } = await runSession(finished, async () => ({ lingering: 0 }), { ...SNAPSHOT_LIMITS, entries: 1 });
    expect(session.status?.phase).toBe('Failed');
    expect(session.status?.result?.message).toContain(
      'Tether did not read the changes (the checkout holds more than 1 files and folders)',
    );
  });
});
