// The environment of every git the runner runs. Nothing the agent can write configures it: no
// system or global configuration, HOME in the runner's private folder, hooks and fsmonitor off
// (command-scope settings outrank any repository file), and the forge credential only as an
// http.extraHeader scoped to the origin of the repository URL — never in argv, a URL or a file.

/** Options for every diff the runner shows: no external diff driver, no textconv, no colour codes. */
export const DIFF_OPTIONS = ['--no-ext-diff', '--no-textconv', '--no-color', '--submodule=short'];

/** The forge token at the moment of use (a file renewed under the runner is read again each time). */
export type TokenSource = () => string | undefined;

export interface GitIdentity {
  name: string;
  email: string;
}

export interface GitEnvOptions {
  /** PATH to find git (and ssh). */
  path: string;
  /** A folder only the runner can write: git's HOME (no ~/.gitconfig, ~/.netrc or XDG files of the agent's). */
  home: string;
  author: GitIdentity;
  /** Set only for a command that talks to the forge: the repository URL, and the token for its origin. */
  forge?: { url: string; token?: string };
  /** The Pod's outbound proxy, as curl reads it (https_proxy, http_proxy, no_proxy). */
  proxy?: Readonly<Record<string, string>>;
}

/** Settings given on the command scope, above every configuration file. */
export const LOCKED_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.untrackedCache', 'false'],
  ['credential.helper', ''],
  // ssh reads ~/.ssh/config from the passwd entry's home, not $HOME: none of it (ProxyCommand).
  ['core.sshCommand', 'ssh -F /dev/null'],
  ['protocol.allow', 'never'],
  ['protocol.https.allow', 'always'],
  ['protocol.http.allow', 'always'],
  ['protocol.ssh.allow', 'always'],
  ['protocol.file.allow', 'always'],
];

/** `http.<scheme>://<host>/.extraHeader` for an http(s) URL; nothing for ssh, file paths or other schemes. */
export function credentialKey(url: string): string | undefined {
  if (!/^https?:\/\//i.test(url)) return undefined;
  const { protocol, host } = new URL(url);
  return `http.${protocol}//${host}/.extraHeader`;
}

export function gitEnvironment(options: GitEnvOptions): Record<string, string> {
  const config: Array<readonly [string, string]> = [...LOCKED_CONFIG];
  const key = options.forge?.token ? credentialKey(options.forge.url) : undefined;
  if (key) {
    const basic = Buffer.from(`x-access-token:${options.forge!.token}`).toString('base64');
    config.push([key, `Authorization: Basic ${basic}`]);
  }
  const { name, email } = options.author;
  const env: Record<string, string> = {
    ...options.proxy,
    PATH: options.path,
    HOME: options.home,
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_AUTHOR_NAME: name,
    GIT_AUTHOR_EMAIL: email,
    GIT_COMMITTER_NAME: name,
    GIT_COMMITTER_EMAIL: email,
    GIT_CONFIG_COUNT: String(config.length),
  };
  config.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}
