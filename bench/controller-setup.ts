// The controller benchmark's settings (its command line), its Sessions and the handles every part uses.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { Informer } from '../common/kube/informer.ts';
import type { SessionClient } from '../common/kube/sessions.ts';
import type { Session } from '../common/session/schema.ts';
import { randomBytes } from 'node:crypto';
import { phoneHasher } from '../common/session/phone-hash.ts';
import { LABEL_PHONE_HASH, workspaceName } from '../common/session/names.ts';
import { retrying } from './async.ts';
import { apiserverProfile, type ControllerProcess } from './kube-metrics.ts';

export const { values: args } = parseArgs({
  options: {
    sessions: { type: 'string', default: '500' },
    total: { type: 'string', default: '10000' },
    lifetimes: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '32' },
    profile: { type: 'string' },
    pprof: { type: 'string' },
    'first-only': { type: 'boolean', default: false },
  },
});
export const BURST = Number(args.sessions);
export const TOTAL = Number(args.total);
export const LIFETIMES = Number(args.lifetimes);
export const NS = 'bench';
export const RUNNERS = 'bench-runners';
export const now = () => new Date().toISOString();
export const phoneOf = (i: number) => `+1415${String(2_000_000 + i).padStart(7, '0')}`;
/** The benchmark's own Session creators in a burst. */
export const CREATORS = 64;

/** The benchmark's key of phone hashes, and the hash it gives the controller. */
const PHONE_HASH_KEY = randomBytes(32).toString('hex');
export const benchPhoneHash = phoneHasher(PHONE_HASH_KEY);

export const CONTROLLER_ENV = {
  TETHER_NAMESPACE: NS,
  TETHER_PHONE_HASH_KEY: PHONE_HASH_KEY,
  TETHER_RUNNER_NAMESPACE: RUNNERS,
  TETHER_POD_TTL: '1s',
  // Every command a cold start (a runner Pod of its own), as before the live runner; bench/controller-live.ts
  // restarts the controller with a keep-alive.
  TETHER_RUNNER_KEEP_ALIVE: '0',
  TETHER_HISTORY_COUNT: '100000',
  TETHER_HISTORY_MAX_AGE: '720h',
  TETHER_CONCURRENCY: args.concurrency!,
};

export const createSession = (
  sessions: SessionClient,
  ns: string,
  name: string,
  phone: string,
  prompt = 'script:\nprogress: bench',
) =>
  retrying(() =>
    sessions.create(
      ns,
      name,
      {
        phone,
        prompt,
        repo: { url: 'https://github.com/acme/web.git' },
        workspace: workspaceName(benchPhoneHash(phone)),
      },
      { labels: { [LABEL_PHONE_HASH]: benchPhoneHash(phone) } },
    ),
  );

/**
 * Runs `work`, with the API server's CPU profile of its first seconds written to --pprof's folder as
 * `<name>.pprof`.
 */
export async function profiled<T>(kc: KubeConfig, name: string, work: () => Promise<T>): Promise<T> {
  if (!args.pprof) return work();
  mkdirSync(args.pprof, { recursive: true });
  const profile = apiserverProfile(kc, 4);
  const result = await work();
  writeFileSync(join(args.pprof, `${name}.pprof`), await profile);
  return result;
}

export interface Bench {
  kc: KubeConfig;
  sessions: SessionClient;
  pods: Informer<V1Pod>;
  podSeen: Map<string, number>;
  /** The Sessions, and when each was first seen `Starting` with its `runnerStart`. */
  started: Informer<Session>;
  startedSeen: Map<string, { at: number; start?: 'warm' | 'cold' }>;
  /** Replaced when a part restarts the controller with other settings. */
  controller: ControllerProcess;
}
