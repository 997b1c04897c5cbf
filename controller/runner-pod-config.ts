// The builders' config of a pass: the install's, with the runner Pods' hostAliases read from the
// cached Services (runner-network.ts).
import type { V1Service } from '@kubernetes/client-node';
import type { BuilderConfig } from './builders.ts';
import type { ControllerConfig } from './config.ts';
import { hostAliases } from './runner-network.ts';

/** The builders' config with the runner Pods' hostAliases from the cached Services, or why there are none yet. */
export function podConfig(
  config: ControllerConfig,
  service: (name: string) => V1Service | undefined,
): { config: BuilderConfig } | { problem: string } {
  const names = hostAliases(config.egress?.noDns?.hosts ?? [], config.namespace, service);
  return 'problem' in names ? names : { config: { ...config, hostAliases: names.aliases } };
}

/** The same, for a pass that cannot wait (the Pod is due now): the problem is an error, retried. */
export function podConfigNow(config: ControllerConfig, service: (name: string) => V1Service | undefined) {
  const made = podConfig(config, service);
  if ('problem' in made) throw new Error(made.problem);
  return made.config;
}
