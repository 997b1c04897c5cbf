// A full workspace volume, however it shows: ENOSPC from a write of this process, "No space
// left on device" in a failed command's message, or — git often says only "unable to write
// file" — a failed step on a volume with (almost) no space left.
import { freeBytes } from './fs.ts';

export const DISK_FULL_MESSAGE =
  'The workspace volume is full (no space left on device), so the work could not be saved. ' +
  'Changes so far are kept on the workspace. Ask your operator for a larger workspace, then send the command again.';

/** Below this much free space a failed write is taken for a full volume. */
const FULL_BELOW_BYTES = 1024 * 1024;

function saysDiskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return true;
  return /No space left on device|ENOSPC|Disk quota exceeded/i.test(
    error instanceof Error ? error.message : String(error),
  );
}

/**
 * Whether `error` came from the workspace volume being full; `workspace` is its root (the mount point, not a path the
 * agent can replace).
 */
export async function isDiskFull(error: unknown, workspace: string): Promise<boolean> {
  if (saysDiskFull(error)) return true;
  const free = await freeBytes(workspace);
  return free !== undefined && free < FULL_BELOW_BYTES;
}
