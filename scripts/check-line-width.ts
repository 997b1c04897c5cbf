// `make lint`: no line of a TypeScript or JavaScript file is wider than Prettier's printWidth. Prettier
// cannot break a long string or comment, so this names each such line as file:line.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const { printWidth } = JSON.parse(readFileSync('.prettierrc.json', 'utf8')) as { printWidth: number };

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.js'], {
  encoding: 'utf8',
})
  .split('\n')
  .filter(Boolean);

const wide = files.flatMap((file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line, index) => {
      const width = [...line].length;
      return width > printWidth ? [`${file}:${index + 1} (${width} characters)`] : [];
    }),
);

if (wide.length > 0) {
  console.error(`${wide.length} lines over ${printWidth} characters:\n${wide.join('\n')}`);
  process.exit(1);
}
