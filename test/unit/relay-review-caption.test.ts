import { describe, expect, it } from 'vitest';
import { pictureCut, reviewCaption, text } from '../../relay/text.ts';

describe('review caption', () => {
  it('turns git diff --stat into a short header and one line per file', () => {
    const stat =
      ' src/components/Navbar.tsx | 35 +++++++++++++++++++++++++++++++----\n src/theme.ts              | 17 ' +
      '+++++++++++++++--\n package.json              |  2 ++\n 3 files changed, 48 insertions(+), 6 deletions(-)';
    expect(reviewCaption(stat, stat)).toBe(
      [
        'Ready for review — 3 files changed, +48 −6:',
        '  src/components/Navbar.tsx | 35 +++++++++++++++++++++++++++++++----',
        '  src/theme.ts | 17 +++++++++++++++--',
        '  package.json | 2 ++',
      ].join('\n'),
    );
  });

  it.each([
    [' a.txt | 1 +\n 1 file changed, 1 insertion(+)', 'Ready for review — 1 file changed, +1:\n  a.txt | 1 +'],
    [' a.txt | 3 ---\n 1 file changed, 3 deletions(-)', 'Ready for review — 1 file changed, −3:\n  a.txt | 3 ---'],
    [
      ' logo.png | Bin 0 -> 120 bytes\n 1 file changed, 0 insertions(+), 0 deletions(-)',
      'Ready for review — 1 file changed:\n  logo.png | Bin 0 -> 120 bytes',
    ],
    ['', 'Ready for review:'],
  ])('renders %j', (stat, caption) => expect(reviewCaption(stat, stat)).toBe(caption));
});

describe('cut diff picture', () => {
  const stat = ' a.txt | 300 +\n 1 file changed, 300 insertions(+)';
  it('says how many diff lines the picture leaves out', () => {
    expect(
      text.changesCaption({ id: 'r1', kind: 'changes', createdAt: '2026-01-01T00:00:00Z' }, stat, {
        total: 306,
        inImage: 120,
      }),
    ).toBe(
      [
        'Ready for review — 1 file changed, +300:',
        '  a.txt | 300 +',
        '⚠️ The pictures show only 120 of 306 diff lines: 186 lines are not in them, and approving publishes them too.',
      ].join('\n'),
    );
  });

  it.each([[undefined], [{ total: 120, inImage: 120 }]])(
    'says nothing more when the picture shows everything (%j)',
    (lines) => {
      expect(pictureCut(lines)).toBe('');
    },
  );
});
