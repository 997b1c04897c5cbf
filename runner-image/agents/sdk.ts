// The agent SDK, loaded on first use instead of on the runner's start path (≈0.9 s of module
// loading): the runner starts it when its run begins, so it loads while the workspace's git work
// runs in child processes.
import type * as Sdk from '@anthropic-ai/claude-agent-sdk';

export type AgentSdk = typeof Sdk;

let loading: Promise<AgentSdk> | undefined;

export function agentSdk(): Promise<AgentSdk> {
  loading ??= import('@anthropic-ai/claude-agent-sdk');
  return loading;
}
