// GitHub webhook test material: signed deliveries shaped as GitHub sends them, a pull request record
// as the relay keeps it, and a small in-memory PullRecords (the real ones are relay/pulls/records.ts).
import { createHmac, randomUUID } from 'node:crypto';
import { eventsOf } from '../../relay/github/events.ts';
import { applyEvent } from '../../relay/github/notices.ts';
import { MemoryPullRecords } from '../../relay/pulls/records.ts';
import type { PullRecord } from '../../relay/pulls/types.ts';

export const SECRET = 'webhook-secret-0123456789';
export const PHONE = '+15555550123';
export const HEAD = 'a'.repeat(40);
export const NEXT_HEAD = 'b'.repeat(40);

export function pullRecord(overrides: Partial<PullRecord> = {}): PullRecord {
  return {
    owner: 'acme',
    repo: 'web',
    number: 7,
    url: 'https://github.com/acme/web/pull/7',
    branch: 'tether/cmd-1a2b',
    repoName: 'web',
    repoUrl: 'https://github.com/acme/web.git',
    phone: PHONE,
    state: 'open',
    headSha: HEAD,
    chosenAt: '2026-11-27T00:00:00.000Z',
    notices: [],
    seen: [],
    ...overrides,
  };
}

/**
 * A record as hostile GitHub text grows it: 250 failing check runs of long names and CJK output,
 * on 250 different heads (the agent writes its own branch's CI output).
 */
export function grownRecord(number: number, phone: string): PullRecord {
  let record = pullRecord({ number, phone, url: `https://github.com/acme/web/pull/${number}` });
  const summary = Array.from({ length: 12 }, () => '中'.repeat(200)).join('\n');
  for (let i = 0; i < 250; i++) {
    const sha = i.toString(16).padStart(4, '0').repeat(16);
    const payload = payloads.checkFailed({ id: 1e15 + i, number, sha, name: '"'.repeat(100), summary });
    for (const event of eventsOf('check_run', payload)) record = applyEvent(record, event, 'now', (s) => s).record;
  }
  return record;
}

/** The in-memory records, counting their writes. */
export class MemoryRecords extends MemoryPullRecords {
  writes = 0;
  /** the next this many updates fail */
  failUpdates = 0;
  constructor(records: PullRecord[] = []) {
    super();
    for (const r of records) void super.update(r.owner, r.repo, r.number, () => r);
  }
  override async update(
    owner: string,
    repo: string,
    number: number,
    change: (c: PullRecord | undefined) => PullRecord | undefined,
  ) {
    if (this.failUpdates > 0 && this.failUpdates--) throw new Error('the API server is not answering');
    this.writes++;
    return super.update(owner, repo, number, change);
  }
  /** Every record (all are PHONE's), the most recently chosen first. */
  all(): Promise<PullRecord[]> {
    return this.ofPhone(PHONE);
  }
  async only(): Promise<PullRecord> {
    return (await this.all())[0]!;
  }
}

const repository = (owner = 'acme', name = 'web') => ({ name, full_name: `${owner}/${name}`, owner: { login: owner } });

export const payloads = {
  checkFailed: (
    o: {
      id?: number;
      sha?: string;
      number?: number;
      owner?: string;
      repo?: string;
      name?: string;
      summary?: string;
    } = {},
  ) => ({
    action: 'completed',
    check_run: {
      id: o.id ?? 101,
      name: o.name ?? 'ci / lint',
      head_sha: o.sha ?? HEAD,
      status: 'completed',
      conclusion: 'failure',
      output: { title: 'Lint failed', summary: o.summary ?? 'src/nav.ts:3 missing semicolon\nsecond line', text: null },
      pull_requests: [{ number: o.number ?? 7, head: { ref: 'tether/cmd-1a2b', sha: o.sha ?? HEAD } }],
    },
    repository: repository(o.owner, o.repo),
    sender: { login: 'github-actions' },
  }),
  suitePassed: (o: { id?: number; sha?: string } = {}) => ({
    action: 'completed',
    check_suite: {
      id: o.id ?? 55,
      head_sha: o.sha ?? NEXT_HEAD,
      conclusion: 'success',
      pull_requests: [{ number: 7 }],
    },
    repository: repository(),
  }),
  review: (o: { id?: number; state?: string; body?: string; login?: string } = {}) => ({
    action: 'submitted',
    review: {
      id: o.id ?? 9001,
      user: { login: o.login ?? 'octocat' },
      body: o.body ?? 'Please rename the helper.',
      state: o.state ?? 'changes_requested',
      commit_id: HEAD,
    },
    pull_request: { number: 7, head: { ref: 'tether/cmd-1a2b', sha: HEAD } },
    repository: repository(),
  }),
  closed: (merged: boolean) => ({
    action: 'closed',
    number: 7,
    pull_request: {
      number: 7,
      merged,
      merged_by: merged ? { login: 'octocat' } : null,
      closed_at: '2026-11-27T01:00:00Z',
    },
    repository: repository(),
    sender: { login: 'octocat' },
  }),
  synchronize: (sha = NEXT_HEAD) => ({
    action: 'synchronize',
    number: 7,
    pull_request: { number: 7, head: { ref: 'tether/cmd-1a2b', sha } },
    repository: repository(),
  }),
};

export interface SignedDelivery {
  headers: Record<string, string>;
  body: string;
}

export const signatureOf = (body: string, secret = SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** A delivery as GitHub sends it: JSON body, its X-Hub-Signature-256, event name and delivery id. */
export function signed(
  event: string,
  payload: unknown,
  options: { id?: string; secret?: string } = {},
): SignedDelivery {
  const body = JSON.stringify(payload);
  const signature = signatureOf(body, options.secret);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': options.id ?? randomUUID(),
      'x-hub-signature-256': signature,
    },
  };
}
