// The inbound side's durable parts, as the relay's configuration makes them: the phones'
// repositories (and their people's rights), and the pull-request records with their recorder.
import type { Logger } from 'pino';
import type { KubeConnection } from '../../common/kube/connection.ts';
import type { RelayConfig } from '../config.ts';
import { PullRecorder } from '../pulls/recorder.ts';
import { ConfigMapPullRecords } from '../pulls/records.ts';
import type { PullActions, PullRecords } from '../pulls/types.ts';
import type { SessionStore } from '../session-store.ts';
import { People } from './people.ts';
import { PhoneRepos } from './phone-repos.ts';
import type { PullParts } from './pull-answers.ts';
import { ConfigMapRepoChoices, MemoryRepoChoices } from './repo-choices.ts';

/**
 * Makes the answers to *fix*, *ignore*, *details*, *merge* over the relay's records and people
 * (relay/github/actions.ts); absent, those words get "not set up".
 */
export type PullActionsFactory = (records: PullRecords, people: People) => PullActions;

/** A phone's default repository is kept only when there is a choice (one repository needs no ConfigMap). */
export function phoneRepos(config: RelayConfig, kube: KubeConnection): PhoneRepos {
  const choices =
    config.repos.length > 1
      ? new ConfigMapRepoChoices(kube, {
          name: config.repoChoicesConfigMap,
          namespace: config.namespace,
          phoneHash: config.phoneHash,
        })
      : new MemoryRepoChoices();
  return new PhoneRepos(config.repos, choices, config.phoneHash, new People(config.people));
}

export interface PullWiring {
  parts: PullParts;
  recorder: PullRecorder;
}

/** The records in the install's ConfigMap, the recorder watching the Sessions, the actions when given. */
export function pullWiring(
  config: RelayConfig,
  kube: KubeConnection,
  store: SessionStore,
  repos: PhoneRepos,
  logger: Logger,
  actions?: PullActionsFactory,
): PullWiring {
  const records = new ConfigMapPullRecords(kube, { name: config.pullRequestsConfigMap, namespace: config.namespace });
  const recorder = new PullRecorder({ store, records, repos: config.repos, logger });
  return {
    recorder,
    parts: {
      records,
      catchUp: (sessions) => recorder.catchUp(sessions),
      ...(actions ? { actions: actions(records, repos.people) } : {}),
    },
  };
}
