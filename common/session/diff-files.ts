// Which changed file a `diff <file>` request means: the relay checks it before asking, the runner
// draws it. Exact path first, then ignoring case, then the one path ending with what was typed.

const lower = (s: string) => s.toLowerCase();

export function matchDiffFile(names: readonly string[], asked: string): string | undefined {
  const wanted = asked.trim().replace(/^[ab]\//, '');
  if (!wanted) return undefined;
  const exact = names.find((n) => n === wanted) ?? names.find((n) => lower(n) === lower(wanted));
  if (exact !== undefined) return exact;
  const endings = names.filter((n) => lower(n).endsWith(`/${lower(wanted)}`));
  return endings.length === 1 ? endings[0] : undefined;
}
