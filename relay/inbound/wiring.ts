// The inbound side's durable parts, as the relay's configuration makes them: the phones'
// repositories (and their people's rights), the pictures sent with commands, and the pull-request
// records with their recorder and the GitHub side (relay/pulls/github.ts).
import type { KubeConnection } from '../../common/kube/connection.ts';
import type { MediaStore } from '../media/store.ts';
import { fetchTwilioImage } from '../media/twilio-media.ts';
import { TWILIO_API_ORIGIN } from './media-fields.ts';
import { InboundImages } from './media-in.ts';
import type { RelayConfig } from '../config.ts';
import { openGithubSide, type GithubSide, type GithubSideOptions } from '../pulls/github.ts';
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

export interface PullsOptions extends Omit<GithubSideOptions, 'records' | 'people'> {
  kube: KubeConnection;
  store: SessionStore;
  repos: PhoneRepos;
  /** replaces the GitHub actions (tests) */
  actions?: PullActionsFactory;
}

export interface Pulls {
  parts: PullParts;
  recorder: PullRecorder;
  github: GithubSide;
  /** stops the GitHub side and the recorder */
  close(): Promise<void>;
}

/** The records in the install's ConfigMap, the recorder watching the Sessions, the GitHub side and its actions. */
export async function openPulls(o: PullsOptions): Promise<Pulls> {
  const { config, repos } = o;
  const records = new ConfigMapPullRecords(o.kube, { name: config.pullRequestsConfigMap, namespace: config.namespace });
  const recorder = new PullRecorder({ store: o.store, records, repos: config.repos, logger: o.logger });
  const github = await openGithubSide({ ...o, records, people: repos.people });
  return {
    recorder,
    github,
    parts: {
      records,
      catchUp: (sessions) => recorder.catchUp(sessions),
      actions: o.actions ? o.actions(records, repos.people) : github.actions,
    },
    async close() {
      await github.close();
      await recorder.stop();
    },
  };
}

/** Pictures from the phone come from Twilio's API, fetched with the account's credentials. */
export function inboundPictures(config: RelayConfig, media: MediaStore) {
  const twilio = config.twilio;
  if (!twilio) return undefined;
  const source = { apiOrigin: new URL(twilio.apiUrl ?? TWILIO_API_ORIGIN).origin, accountSid: twilio.accountSid };
  const images = new InboundImages({
    fetch: (url, announced) =>
      fetchTwilioImage(url, announced, { ...source, authToken: twilio.authToken, ...config.inboundImages }),
    store: media,
    namespace: config.namespace,
    maxBytes: config.inboundImages.maxBytes,
  });
  return { source, images };
}
