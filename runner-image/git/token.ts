// The forge token as a function: a token file (an App installation token the controller renews under
// the runner, mounted from its Secret) is read again at each use, and every value read is handed to
// the redactor; without a file, the fixed GITHUB_TOKEN.
import { readFileSync } from 'node:fs';
import type { TokenSource } from './env.ts';

export function githubToken(
  github: { token?: string; tokenFile?: string },
  learn: (secret: string) => void,
): TokenSource {
  const { token, tokenFile } = github;
  if (!tokenFile) return () => token;
  return () => {
    let text: string;
    try {
      text = readFileSync(tokenFile, 'utf8').trim();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new Error(`cannot read the GitHub token file ${tokenFile}: ${code}`, { cause: error });
    }
    if (!text) throw new Error(`the GitHub token file ${tokenFile} is empty`);
    learn(text);
    return text;
  };
}
