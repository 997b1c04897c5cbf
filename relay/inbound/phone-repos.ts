// Which repository a phone's command works on: `@name` for one command, else the phone's default
// (`repo name`, kept in RepoChoices), else the install's first. Each repository has its own
// workspace per phone, and an agent conversation is only continued in the repository it began in.
// With the people map, a phone is kept to its person's repositories.
import type { SessionDefaults } from '../../common/session/defaults.ts';
import { workspaceName } from '../../common/session/names.ts';
import { legacyPhoneHash, type PhoneHash } from '../../common/session/phone-hash.ts';
import type { SessionSpec } from '../../common/session/schema.ts';
import { findRepo, workspaceRepo, type NamedRepo } from '../repo-list.ts';
import { text } from '../text.ts';
import { echoName } from './command.ts';
import { People } from './people.ts';
import type { RepoChoices } from './repo-choices.ts';
import type { PhoneView } from './phone-view.ts';
import type { CommandOptions, Route } from './router.ts';

export class PhoneRepos {
  private readonly repos: readonly NamedRepo[];
  private readonly choices: RepoChoices;
  private readonly phoneHash: PhoneHash;
  readonly people: People;

  constructor(repos: readonly NamedRepo[], choices: RepoChoices, phoneHash: PhoneHash, people = new People()) {
    if (!repos.length) throw new Error('an install needs at least one repository');
    this.repos = repos;
    this.choices = choices;
    this.phoneHash = phoneHash;
    this.people = people;
  }

  get names(): string[] {
    return this.repos.map((r) => r.name);
  }

  /** The repositories the phone may use (all of them without a people map). */
  private mine(phone: string): readonly NamedRepo[] {
    const mine = this.repos.filter((r) => this.people.mayUse(phone, r.name));
    return mine.length ? mine : this.repos;
  }

  /** The phone's default: its own choice while the install still lists it (and it may), else its first. */
  async current(phone: string): Promise<NamedRepo> {
    const mine = this.mine(phone);
    if (mine.length === 1) return mine[0]!;
    const chosen = await this.choices.get(phone);
    return (chosen && findRepo(mine, chosen)) || mine[0]!;
  }

  /** The repository a command works on: `@name`, else the phone's default. */
  async pick(phone: string, options: CommandOptions): Promise<NamedRepo> {
    return (options.repo && findRepo(this.repos, options.repo)) || (await this.current(phone));
  }

  /**
   * The spec of a new command's Session on `repo` (pick()); `resumeIn` gives the conversation to
   * continue in its workspace (the pull request's, when the command continues one).
   */
  spec(
    phone: string,
    repo: NamedRepo,
    prompt: string,
    options: CommandOptions,
    defaults: SessionDefaults,
    resumeIn: PhoneView,
  ): SessionSpec {
    const other = workspaceRepo(this.repos, repo);
    const workspace = workspaceName(this.phoneHash(phone), other);
    // The same workspace as named by earlier versions (the controller mounts that claim while it is there).
    const before = workspaceName(legacyPhoneHash(phone), other);
    const where = { workspaces: [workspace, before], url: repo.url, pr: options.pullRequest?.number };
    const resume = resumeIn.resumeId(phone, where);
    return {
      phone,
      prompt,
      repo: { url: repo.url, baseBranch: repo.baseBranch },
      workspace,
      timeouts: { ...defaults.timeouts },
      ...(options.mode === 'plan' ? { mode: 'plan' as const } : {}),
      ...(resume ? { resumeAgentSession: resume } : {}),
    };
  }

  /** The reply to `repo`, `repo <name>`, an unknown `@name`, a bare `@name`, or a bare `plan`. */
  async answer(
    phone: string,
    route: Extract<Route, { kind: 'repo' | 'unknownRepo' | 'repoUsage' | 'planUsage' }>,
  ): Promise<string> {
    if (route.kind === 'planUsage') return text.planUsage();
    if (route.kind === 'repoUsage') return text.repoUsage(route.name);
    const chosen = route.kind === 'repo' && route.name !== undefined ? findRepo(this.repos, route.name) : undefined;
    if (chosen && !this.people.mayUse(phone, chosen.name)) return this.notYours(phone, chosen.name);
    if (chosen) {
      await this.choices.set(phone, chosen.name);
      return text.repoChosen(chosen.name, this.mine(phone).length);
    }
    const unknown = route.name === undefined ? undefined : echoName(route.name);
    return text.repoList(
      this.mine(phone).map((r) => r.name),
      (await this.current(phone)).name,
      unknown,
    );
  }

  /** The reply to a command or choice on a repository the phone's person may not use. */
  notYours(phone: string, name: string): string {
    return text.repoNotYours(
      name,
      this.mine(phone).map((r) => r.name),
    );
  }

  /** For *help* and *status*: the repositories and the phone's default, when there is a choice. */
  async summary(phone: string): Promise<string | undefined> {
    const mine = this.mine(phone);
    if (mine.length === 1) return undefined;
    return text.repoSummary(
      mine.map((r) => r.name),
      (await this.current(phone)).name,
    );
  }
}
