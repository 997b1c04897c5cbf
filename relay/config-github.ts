// The relay's GitHub variables (client, poll, merge): their schema, spread into RELAY_ENV, and
// what config.ts makes of them.
import { Type } from '@sinclair/typebox';
import { ConfigError } from '../common/config/env.ts';
import { duration, durationMs, httpUrl } from '../common/config/values.ts';
import type { GitHubSettings } from './github/client.ts';
import type { MergeSetting } from './github/merge.ts';
import type { PollSettings } from './github/poll.ts';

export const GITHUB_ENV = {
  TETHER_GITHUB_API_URL: Type.String({
    ...httpUrl('base URL of the GitHub REST API (Enterprise: https://host/api/v3; tests: the stand-in)'),
    default: 'https://api.github.com',
  }),
  TETHER_GITHUB_TOKEN_FILE: Type.Optional(
    Type.String({
      minLength: 1,
      description: "file holding the relay's GitHub token, read at each call (renewed in place)",
    }),
  ),
  TETHER_GITHUB_TIMEOUT: duration('10s', 'time one GitHub API call may take; at least 1s'),
  TETHER_GITHUB_POLL_SECONDS: Type.Integer({
    default: 0,
    minimum: 0,
    maximum: 86_400,
    description: 'seconds between two polls of the open pull requests (when no webhook reaches the relay); 0: no poll',
  }),
  TETHER_GITHUB_POLL_MAX: Type.Integer({
    default: 50,
    minimum: 1,
    maximum: 1000,
    description: 'open pull requests read per poll round (round-robin): 3 conditional requests each',
  }),
  TETHER_GITHUB_MERGE: Type.Union([Type.Literal('never'), Type.Literal('whenGreen')], {
    default: 'never',
    description: '*merge* from the phone: never, or when every check run of the head passed',
  }),
};

interface GitHubEnv {
  TETHER_GITHUB_API_URL: string;
  TETHER_GITHUB_TOKEN_FILE?: string;
  TETHER_GITHUB_TIMEOUT: string;
  TETHER_GITHUB_POLL_SECONDS: number;
  TETHER_GITHUB_POLL_MAX: number;
  TETHER_GITHUB_MERGE: MergeSetting;
}

/** The client's settings (absent without a token file), the poll's (absent when off) and the merge setting. */
export function githubConfig(env: GitHubEnv): {
  client?: GitHubSettings;
  poll?: PollSettings;
  merge: MergeSetting;
} {
  const timeoutMs = durationMs(env.TETHER_GITHUB_TIMEOUT);
  if (timeoutMs < 1000)
    throw new ConfigError('TETHER_GITHUB_TIMEOUT', `must be at least 1s, got ${env.TETHER_GITHUB_TIMEOUT}`);
  const tokenFile = env.TETHER_GITHUB_TOKEN_FILE;
  const needsToken = (variable: string) =>
    new ConfigError(variable, 'needs TETHER_GITHUB_TOKEN_FILE (the relay reads GitHub with its own token)');
  if (env.TETHER_GITHUB_POLL_SECONDS > 0 && !tokenFile) throw needsToken('TETHER_GITHUB_POLL_SECONDS');
  if (env.TETHER_GITHUB_MERGE !== 'never' && !tokenFile) throw needsToken('TETHER_GITHUB_MERGE');
  return {
    client: tokenFile ? { apiUrl: env.TETHER_GITHUB_API_URL.replace(/\/+$/, ''), tokenFile, timeoutMs } : undefined,
    poll:
      env.TETHER_GITHUB_POLL_SECONDS > 0
        ? { intervalMs: env.TETHER_GITHUB_POLL_SECONDS * 1000, maxPerRound: env.TETHER_GITHUB_POLL_MAX }
        : undefined,
    merge: env.TETHER_GITHUB_MERGE,
  };
}
