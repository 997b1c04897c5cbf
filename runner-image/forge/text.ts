// What Tether writes to the forge — the commit message, the pull request's title and body — as a
// reviewer there must read it: characters that hide or reorder text shown as code points, as on the
// phone (common/hidden-text.ts); line ends as \n. The branch, tether/<Session name>, needs nothing:
// a Kubernetes name holds only [a-z0-9.-]. Pure.
import { showHidden } from '../../common/hidden-text.ts';

export const forgeText = (text: string) => showHidden(text.replace(/\r\n?/g, '\n'));
