// The supervisor's model endpoint on loopback (TETHER_MODEL_PORT, or any free port): the scripted
// model without a key, or (agent container with a key) the proxy that adds it.
import type { Logger } from '../../common/log.ts';
import type { RunnerConfig } from '../config.ts';
import type { ProxyAgents } from '../egress/http.ts';
import { startScriptedModel, type ScriptedModel } from '../scripted-model/server.ts';
import { startModelProxy, type ModelProxy } from './proxy.ts';
import type { ModelSpend } from './spend.ts';

/** What Claude Code talks to on loopback: the scripted model, or (in the agent container) the proxy adding the key. */
export type ModelEndpoint = ScriptedModel | ModelProxy;

export async function startModelEndpoint(
  config: RunnerConfig,
  log: Logger,
  spend: ModelSpend,
  egress: ProxyAgents | undefined,
): Promise<ModelEndpoint | undefined> {
  const port = config.modelPort;
  if (config.scriptedModel) return startScriptedModel({ port, log: log.child({ scriptedModel: true }) });
  if (config.agentSocket && config.anthropicApiKey) {
    return startModelProxy({
      upstream: config.anthropicBaseUrl,
      apiKey: config.anthropicApiKey,
      log: log.child({ modelProxy: true }),
      spend,
      port,
      egress,
    });
  }
  return undefined;
}
