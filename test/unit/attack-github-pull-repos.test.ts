// A check run or suite lists the pull requests whose head matches it, and GitHub lists there pull
// requests of other repositories too (one opened in the parent from a branch of this fork): their
// number is another repository's. Such an entry is not this repository's pull request #n.
import { describe, expect, it } from 'vitest';
import { eventsOf } from '../../relay/github/events.ts';
import { payloads } from './github-fixtures.ts';

const repo = (id: number, owner: string, name: string) => ({
  id,
  name,
  url: `https://api.github.com/repos/${owner}/${name}`,
});
/** A pull request entry as GitHub lists it: #7 of acme/upstream, from a branch of acme/web. */
const upstreamPull = {
  number: 7,
  head: { ref: 'tether/cmd-1a2b', sha: 'a'.repeat(40), repo: repo(1, 'acme', 'web') },
  base: { ref: 'main', sha: 'e'.repeat(40), repo: repo(2, 'acme', 'upstream') },
};
const ownPull = { ...upstreamPull, base: { ...upstreamPull.base, repo: repo(1, 'acme', 'web') } };
const inWeb = <T extends { repository: object }>(payload: T) => ({
  ...payload,
  repository: { ...payload.repository, id: 1 },
});

describe("a check names another repository's pull request", () => {
  it('a failing check run of acme/web tells nothing to acme/web#7 for acme/upstream#7', () => {
    const payload = inWeb(payloads.checkFailed());
    payload.check_run.pull_requests = [upstreamPull];
    expect(eventsOf('check_run', payload)).toEqual([]);
    payload.check_run.pull_requests = [ownPull];
    expect(eventsOf('check_run', payload).map((e) => `${e.owner}/${e.repo}#${e.number}`)).toEqual(['acme/web#7']);
  });

  it('a passing suite of acme/web tells nothing to acme/web#7 for acme/upstream#7', () => {
    const payload = inWeb(payloads.suitePassed());
    payload.check_suite.pull_requests = [upstreamPull];
    expect(eventsOf('check_suite', payload)).toEqual([]);
  });
});
