// The house rules on size, checked over the product's code (tests excepted): files ≤ 300 lines,
// functions ≤ 60 lines of their own code (a factory's inner functions count as their own).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 60;
const PRODUCT = /^(common|controller|relay|egress|runner-image|local|bench|scripts)\/.*\.ts$/;

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' })
  .split('\n')
  .filter((f) => PRODUCT.test(f));

const lineOf = (source: ts.SourceFile, pos: number) => source.getLineAndCharacterOfPosition(pos).line;

/** Lines of a function's own code: its span less the spans of the functions nested in it. */
function ownLines(source: ts.SourceFile, fn: ts.Node): number {
  let nested = 0;
  const visit = (node: ts.Node) => {
    if (node !== fn && ts.isFunctionLike(node) && 'body' in node && node.body) {
      nested += lineOf(source, node.getEnd()) - lineOf(source, node.getStart()) + 1;
      return;
    }
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(fn, visit);
  return lineOf(source, fn.getEnd()) - lineOf(source, fn.getStart()) + 1 - nested;
}

function longFunctions(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const lines = ownLines(source, node);
      if (lines > MAX_FUNCTION_LINES) found.push(`${file}:${lineOf(source, node.getStart()) + 1} (${lines} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('code shape', () => {
  it('has product files of at most 300 lines', () => {
    const long = files.filter((f) => readFileSync(f, 'utf8').split('\n').length > MAX_FILE_LINES + 1);
    expect(long).toEqual([]);
  });

  it('has product functions of at most 60 lines (a top-level script body is not a function)', () => {
    expect(files.flatMap(longFunctions)).toEqual([]);
  });
});
