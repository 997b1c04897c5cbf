// What the local stack isolates depends on who runs it: as root, each Pod's containers run as host
// ids of the Pod's own (node-agent/identity.ts) and the stack's state is closed to them; as anyone
// else, every container runs as that one user, so nothing separates one phone's agent from another's
// or from the stack. `make dev` says so loudly.
const BAR = '!'.repeat(94);

/** The warning for a stack that cannot isolate its agents; undefined as root. */
export function notIsolatedWarning(uid = process.getuid?.()): string | undefined {
  if (uid === 0) return undefined;
  return [
    BAR,
    `!! NOT ISOLATED: make dev runs as uid ${uid ?? 'unknown'}, not root, so every agent runs as this same user.`,
    '!! Agents are not isolated from each other or from the stack: any agent can read and change other',
    "!! phones' workspaces, transcripts and branches, the stack's logs and journal, and its credentials",
    "!! (the control plane's certificates, the runner Secret). Use it with repositories and phones you trust,",
    '!! or run make dev as root (as CI does) to give each Pod users of its own.',
    BAR,
    '',
  ].join('\n');
}
