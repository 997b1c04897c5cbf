// The runner's own check of the Session's repository (defence in depth behind the controller's):
// a repository on a host the install does not list fails the Session before any git runs, and the
// token never reaches that host; one on a listed host is fetched with it.
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { basicAuth, serveGitOverHttp } from '../../local/git-forge.ts';
import {
  createStartedSession,
  makeRemote,
  specFor,
  startRunner,
  useRunnerTestbed,
  waitForPhase,
} from '../support/runner.ts';

const bed = useRunnerTestbed('repohosts');
const CANARY = 'ghp_CanaryTokenForRepoHostTests0123456789';

describe.concurrent('the repository host list in the runner', { timeout: 120_000 }, () => {
  it('a host not on the list: Failed with a plain message, no request reaches it, the token stays', async () => {
    const remote = makeRemote();
    const foreign = await serveGitOverHttp(join(remote.root, 'remotes'), CANARY, { record: true });
    try {
      const name = await createStartedSession(
        bed.sessions,
        bed.ns,
        specFor('script:\nsay: hi', `${foreign.origin}/acme/web.git`),
      );
      const runner = startRunner({
        kubeconfig: inject('kubeconfig'),
        namespace: bed.ns,
        name,
        env: { GITHUB_API_URL: bed.github.url, GITHUB_TOKEN: CANARY, TETHER_REPO_HOSTS: 'github.com' },
      });
      expect(await runner.exited, runner.output()).toBe(0);
      const session = await waitForPhase(bed.sessions, bed.ns, name, 'Failed');
      expect(session.status?.result?.message).toBe(
        `Could not get the repository: spec.repo.url points at the host ${new URL(foreign.origin).host}, which is ` +
          `not on this install's list of repository hosts (github.com)`,
      );
      expect(foreign.requests).toEqual([]);
      expect(runner.output()).not.toContain(CANARY);
    } finally {
      await foreign.close();
    }
  });

  it('the same forge on the list is fetched, with the token', async () => {
    const remote = makeRemote();
    const forge = await serveGitOverHttp(join(remote.root, 'remotes'), CANARY, { record: true });
    try {
      const name = await createStartedSession(
        bed.sessions,
        bed.ns,
        specFor('script:\nsay: hi', `${forge.origin}/acme/web.git`),
      );
      const runner = startRunner({
        kubeconfig: inject('kubeconfig'),
        namespace: bed.ns,
        name,
        env: { GITHUB_API_URL: bed.github.url, GITHUB_TOKEN: CANARY, TETHER_REPO_HOSTS: new URL(forge.origin).host },
      });
      expect(await runner.exited, runner.output()).toBe(0);
      expect((await waitForPhase(bed.sessions, bed.ns, name, 'Succeeded')).status?.result?.summary).toBe('hi');
      expect(forge.requests.length).toBeGreaterThan(0);
      expect(forge.requests.every((r) => r.authorization === basicAuth(CANARY))).toBe(true);
    } finally {
      await forge.close();
    }
  });
});
