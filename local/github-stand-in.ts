// Today's name of the GitHub stand-in (local/github/): `startFakeGitHub` is `startGitHubStandIn`.
// Given a token, it answers 401 to any request without it, as GitHub does: an agent's process on the
// same machine cannot open pull requests in the runners' name.
import { startGitHubStandIn, type GitHubStandIn, type GitHubStandInOptions } from './github/stand-in.ts';

export type { RecordedPull } from './github/model.ts';
export type FakeGitHub = GitHubStandIn;
export type FakeGitHubOptions = GitHubStandInOptions;

export const startFakeGitHub = (options: FakeGitHubOptions = {}): Promise<FakeGitHub> => startGitHubStandIn(options);
