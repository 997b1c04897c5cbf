// Each failing check run is its own webhook delivery. A CI matrix — which the agent's own branch can
// widen to GitHub's 256 jobs, and any ordinary CI has dozens of — failing on one head would send the
// phone one WhatsApp message per job, each asking *fix* / *ignore* / *details*: a flood that costs
// the install per message and buries everything else. One head's failures should reach the phone
// as one message (the notice carries `checks`, a list).
import { afterEach, describe, expect, it } from 'vitest';
import { FIX_CHECK_RUNS_MAX } from '../../common/session/forge-schema.ts';
import { startGithubRelay, type GithubRelay } from './github-relay.ts';
import { HEAD, payloads, signed } from './github-fixtures.ts';

const JOBS = 40;
let relay: GithubRelay | undefined;
afterEach(async () => {
  await relay?.close();
});

describe('a CI matrix failing on one head', () => {
  it('reaches the phone as one message, not one per job', async () => {
    relay = await startGithubRelay();
    for (let job = 0; job < JOBS; job++) {
      const d = signed('check_run', payloads.checkFailed({ id: 5000 + job, sha: HEAD, name: `test (shard ${job})` }));
      const res = await fetch(`${relay.base}/github/webhook`, { method: 'POST', headers: d.headers, body: d.body });
      expect(res.status).toBe(202);
    }
    await relay.deliveries.idle();
    expect(relay.sent.length).toBeLessThanOrEqual(1);
    // *fix* on it covers as many of the failed runs as a fix carries.
    const [notice] = (await relay.records.only()).notices;
    expect(notice!.checkRuns).toEqual(Array.from({ length: FIX_CHECK_RUNS_MAX }, (_, job) => 5000 + job));
  });
});
