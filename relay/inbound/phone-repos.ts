// Which repository a phone's command works on: `@name` for one command, else the phone's default
// (`repo name`, kept in RepoChoices), else the install's first. Each repository has its own
// workspace per phone, and an agent conversation is only continued in the repository it began in.
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { workspaceName } from '../../common/session/names.ts';
import { legacyPhoneHash, type PhoneHash } from '../../common/session/phone-hash.ts';
import type { SessionSpec } from '../../common/session/schema.ts';
import { findRepo, workspaceRepo, type NamedRepo } from '../repo-list.ts';
import { text } from '../text.ts';
import { echoName } from './command.ts';
import type { RepoChoices } from './repo-choices.ts';
import type { PhoneView } from './phone-view.ts';
import type { CommandOptions, Route } from './router.ts';

export class PhoneRepos {
  private readonly repos: readonly NamedRepo[];
  private readonly choices: RepoChoices;
  private readonly phoneHash: PhoneHash;

  constructor(repos: readonly NamedRepo[], choices: RepoChoices, phoneHash: PhoneHash) {
    if (!repos.length) throw new Error('an install needs at least one repository');
    this.repos = repos;
    this.choices = choices;
    this.phoneHash = phoneHash;
  }

  get names(): string[] {
    return this.repos.map((r) => r.name);
  }

  /** The phone's default: its own choice while the install still lists it, else the install's first. */
  async current(phone: string): Promise<NamedRepo> {
    if (this.repos.length === 1) return this.repos[0]!;
    const chosen = await this.choices.get(phone);
    return (chosen && findRepo(this.repos, chosen)) || this.repos[0]!;
  }

  /** The spec of a new command's Session; `resumeIn` gives the conversation to continue in a workspace. */
  async spec(
    phone: string,
    prompt: string,
    options: CommandOptions,
    defaults: SessionDefaults,
    resumeIn: PhoneView,
  ): Promise<{ spec: SessionSpec; repo: string }> {
    const repo = (options.repo && findRepo(this.repos, options.repo)) || (await this.current(phone));
    const other = workspaceRepo(this.repos, repo);
    const workspace = workspaceName(this.phoneHash(phone), other);
    // The same workspace as named by earlier versions (the controller mounts that claim while it is there).
    const before = workspaceName(legacyPhoneHash(phone), other);
    const resume = resumeIn.resumeId(phone, { workspaces: [workspace, before], url: repo.url });
    const spec: SessionSpec = {
      phone,
      prompt,
      repo: { url: repo.url, baseBranch: repo.baseBranch },
      workspace,
      timeouts: { ...defaults.timeouts },
      ...(options.mode === 'plan' ? { mode: 'plan' as const } : {}),
      ...(resume ? { resumeAgentSession: resume } : {}),
    };
    return { spec, repo: repo.name };
  }

  /** The reply to `repo`, `repo <name>`, an unknown `@name`, a bare `@name`, or a bare `plan`. */
  async answer(
    phone: string,
    route: Extract<Route, { kind: 'repo' | 'unknownRepo' | 'repoUsage' | 'planUsage' }>,
  ): Promise<string> {
    if (route.kind === 'planUsage') return text.planUsage();
    if (route.kind === 'repoUsage') return text.repoUsage(route.name);
    const chosen = route.kind === 'repo' && route.name !== undefined ? findRepo(this.repos, route.name) : undefined;
    if (chosen) {
      await this.choices.set(phone, chosen.name);
      return text.repoChosen(chosen.name, this.repos.length);
    }
    const unknown = route.name === undefined ? undefined : echoName(route.name);
    return text.repoList(this.names, (await this.current(phone)).name, unknown);
  }

  /** For *help* and *status*: the repositories and the phone's default, when there is a choice. */
  async summary(phone: string): Promise<string | undefined> {
    if (this.repos.length === 1) return undefined;
    return text.repoSummary(this.names, (await this.current(phone)).name);
  }
}
