import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const WORKSPACE_FS_MESSAGE =
  'The supervisor opens a path the agent can write only through runner-image/workspace/fs.ts; ' +
  'a file that touches none may be added, with its reason, to WORKSPACE_FS_ALLOWED in eslint.config.js.';

/** Files of runner-image/ that may import fs, and why none of them touches a path the agent can write. */
export const WORKSPACE_FS_ALLOWED = [
  // The one module: every component opened relative to the folder before it, no symlink followed.
  'runner-image/workspace/fs.ts',
  // The image's own files (its CLAUDE.md, a package's stylesheet): read-only, on no volume.
  'runner-image/image-files.ts',
  // /proc only: the process table for stopping Claude Code's tree.
  'runner-image/agents/process-group.ts',
  // The channel's socket folder: created by the supervisor and checked to be its own (uid, 0755)
  // before use; the agent can connect but not write there.
  'runner-image/agent-channel/socket.ts',
  // The runner's private folder (pictures kept without a relay) and its projected relay token.
  'runner-image/pictures/uploads.ts',
  // lstat, readlink and realpath only, to judge where a tool call's path leads (docs/security.md):
  // no file is opened, read or written.
  'runner-image/workspace/paths.ts',
  // The private git store (the object store, git's HOME); the checkout, its .git and the base marker
  // only through workspace-fs (workspace/snapshot.ts, workspace/checkout.ts).
  'runner-image/git/store.ts',
  // The store's own leftovers (lock files, scratch) in the private folder; the base marker only through workspace-fs.
  'runner-image/git/store-upkeep.ts',
  // The scratch clone in the private folder, copied in as the agent's .git through workspace-fs.
  'runner-image/git/agent-git.ts',
  // The GitHub token file: a Secret volume the runner container alone mounts, never the workspace.
  'runner-image/git/token.ts',
  // The egress password file: the Pod's own Secret volume, mounted by the runner container alone.
  'runner-image/egress/token.ts',
  // The agent container's entrypoint: runs as the agent's own user, with the agent's rights.
  'runner-image/agent-host/**',
];

export default tseslint.config(
  { ignores: ['node_modules/', '.cache/', 'dist/', 'test-results/', '.tether-state/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Only config.ts reads process.env.' },
      ],
    },
  },
  {
    files: ['**/config.ts', 'test/**', 'vitest.config.ts'],
    rules: { 'no-restricted-properties': 'off' },
  },
  // The supervisor touches the workspace (any folder the agent can write) only through
  // runner-image/workspace/fs.ts: no other file of runner-image/ imports fs ...
  {
    files: ['runner-image/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ['fs', 'node:fs', 'fs/promises', 'node:fs/promises'].map((name) => ({
            name,
            message: WORKSPACE_FS_MESSAGE,
          })),
        },
      ],
    },
  },
  // ... except these, each of which touches no path the agent can write.
  {
    files: WORKSPACE_FS_ALLOWED,
    rules: { 'no-restricted-imports': 'off' },
  },
);
