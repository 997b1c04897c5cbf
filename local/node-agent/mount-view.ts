// The filesystem an isolated container's processes see on the local node (root only): the host's,
// in a mount namespace of their own (private propagation) in which the folders where the host's
// Unix sockets live are each covered by an empty tmpfs. A network namespace with loopback alone does
// not stop a connect() to a socket file: the system D-Bus (/run/dbus, 0666: systemd-resolved sends any
// name to the network's DNS), a desktop's X11 socket (/tmp/.X11-unix), another user's listener in /tmp.
// What the container needs under a covered folder (the node's state folder, its image) is bound back
// from the folder underneath, reached through a file descriptor opened before the cover.
import { existsSync, realpathSync } from 'node:fs';
import { relative, isAbsolute } from 'node:path';

/** Where a host keeps sockets anyone may reach: runtime folders and the shared temporary ones. */
export const HIDDEN_FOLDERS = ['/run', '/var/run', '/tmp', '/var/tmp', '/dev/shm'];

/** The sticky, world-writable temporary folders: their cover is too (each container gets its own). */
const STICKY = new Set(['/tmp', '/var/tmp', '/dev/shm']);

export interface MountView {
  /** Folders covered by an empty tmpfs (real paths, no duplicates). */
  hidden: string[];
  /** Folders under a hidden one bound back (real paths). */
  kept: string[];
}

/**
 * Runs in the new mount namespace (sh, as root): `hide:<mode>:<folder>` opens the folder as fd 3 and
 * covers it; each `keep:<path>` after it binds <path> back from under the cover (`mount -c`: the path
 * through /proc/self/fd/3 must not be canonicalized onto the cover). Then execs the rest (setpriv …).
 */
const SCRIPT = `set -eu
while [ "$1" != -- ]; do
  case "$1" in
    hide:*) rest="\${1#hide:}"; mode="\${rest%%:*}"; folder="\${rest#*:}"
      exec 3<"$folder"
      mount -t tmpfs -o "mode=$mode,nosuid,nodev" tether-hidden "$folder" ;;
    keep:*) path="\${1#keep:}"; mkdir -p "$path"; mount -c --rbind "/proc/self/fd/3\${path#"$folder"}" "$path" ;;
    *) echo "mount view: unknown step $1" >&2; exit 2 ;;
  esac
  shift
done
shift
exec 3<&-
exec "$@"`;

const under = (path: string, folder: string) => {
  const rel = relative(folder, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

/** The view hiding HIDDEN_FOLDERS (those this host has) and keeping `needed` (paths the container uses). */
export function mountView(needed: string[], hiddenFolders = HIDDEN_FOLDERS): MountView {
  const real = (path: string) => (existsSync(path) ? realpathSync(path) : path);
  const hidden = [...new Set(hiddenFolders.filter(existsSync).map(real))];
  const kept = [...new Set(needed.map(real))].filter((path) => hidden.some((folder) => under(path, folder)));
  return { hidden, kept };
}

/** The command prefix entering the view: unshare a mount namespace, cover, bind back, then exec what follows. */
export function mountViewCommand(view: MountView): string[] {
  const steps = view.hidden.flatMap((folder) => [
    `hide:${STICKY.has(folder) ? '1777' : '0755'}:${folder}`,
    ...view.kept.filter((path) => under(path, folder)).map((path) => `keep:${path}`),
  ]);
  return ['unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', SCRIPT, 'mount-view', ...steps, '--'];
}
