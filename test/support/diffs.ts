// Unified diffs for the diff-picture tests, as git writes them: ordinary, long, and hostile ones.

export const SAMPLE_DIFF = `diff --git a/src/config.ts b/src/config.ts
index 1111111..2222222 100644
--- a/src/config.ts
+++ b/src/config.ts
@@ -1,5 +1,6 @@ export function load()
 export const a = 1;
-export const token = 'abc';
+export const token = process.env.TOKEN;
+const html = "<script>alert(1)</script>";
 /* a comment
  over lines */
 function f(x: number): string { return String(x) + 'a long line that wraps on the phone screen'; }
diff --git a/README.md b/README.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/README.md
@@ -0,0 +1,2 @@
+# Title
+Some *text* here.
\\ No newline at end of file
diff --git a/img.png b/img.png
index 1111111..2222222 100644
Binary files a/img.png and b/img.png differ
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
`;

export const HOSTILE_NAMES_DIFF = `diff --git a/<script>alert(1)</script>.html b/<script>alert(1)</script>.html
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/<script>alert(1)</script>.html
@@ -0,0 +1,3 @@
+<script>alert(document.cookie)</script>
+"><img src=x onerror=alert(1)>
+</code></div><script>fetch('http://127.0.0.1:9/')</script>
diff --git "a/new\\nline.txt" "b/new\\nline.txt"
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ "b/new\\nline.txt"
@@ -0,0 +1 @@
+x
diff --git "a/caf\\303\\251/\\346\\227\\245\\346\\234\\254.md" "b/caf\\303\\251/\\346\\227\\245\\346\\234\\254.md"
index 1111111..2222222 100644
--- "a/caf\\303\\251/\\346\\227\\245\\346\\234\\254.md"
+++ "b/caf\\303\\251/\\346\\227\\245\\346\\234\\254.md"
@@ -1 +1 @@
-日本語のテキスト
+日本語のテキスト、もっと長い行です。${'幅'.repeat(60)}
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 1111111..0000000
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/old/name.ts b/new/name.ts
similarity index 90%
rename from old/name.ts
rename to new/name.ts
index 1111111..2222222 100644
--- a/old/name.ts
+++ b/new/name.ts
@@ -1 +1 @@
-export const n = 1;
+export const n = 2;
diff --git a/crlf.txt b/crlf.txt
index 1111111..2222222 100644
--- a/crlf.txt
+++ b/crlf.txt
@@ -1 +1 @@
-one\r
+two\r
diff --git a/bidi.ts b/bidi.ts
index 1111111..2222222 100644
--- a/bidi.ts
+++ b/bidi.ts
@@ -1 +1 @@
-const ok = true;
+const ok = true; /*\u202E } if (admin) { \u2066*/
`;

/** `count` small files of `lines` added lines each. */
export function manyFiles(count: number, lines: number): string {
  return (
    Array.from({ length: count }, (_, f) =>
      [
        `diff --git a/src/module-${f}.ts b/src/module-${f}.ts`,
        'index 1111111..2222222 100644',
        `--- a/src/module-${f}.ts`,
        `+++ b/src/module-${f}.ts`,
        `@@ -1,1 +1,${lines + 1} @@`,
        ' // header',
        ...Array.from({ length: lines }, (_, i) => `+export const value${i} = ${i} * factor; // file ${f}`),
      ].join('\n'),
    ).join('\n') + '\n'
  );
}

/** One file with `hunks` hunks of `lines` changed lines each, 100 lines apart. */
export function bigFile(hunks: number, lines: number): string {
  const body = Array.from({ length: hunks }, (_, h) => {
    const start = h * (lines + 100) + 1;
    return [
      `@@ -${start},1 +${start},${lines + 1} @@ function part${h}()`,
      ' context();',
      ...Array.from({ length: lines }, (_, i) => `+  step(${h}, ${i}); // line ${i} of hunk ${h}`),
    ].join('\n');
  });
  return (
    [
      'diff --git a/src/big.ts b/src/big.ts',
      'index 1111111..2222222 100644',
      '--- a/src/big.ts',
      '+++ b/src/big.ts',
      ...body,
    ].join('\n') + '\n'
  );
}

/** A minified bundle: one line of `chars` characters. */
export function hugeLine(chars: number): string {
  return (
    [
      'diff --git a/dist/app.min.js b/dist/app.min.js',
      'new file mode 100644',
      'index 0000000..1111111',
      '--- /dev/null',
      '+++ b/dist/app.min.js',
      '@@ -0,0 +1 @@',
      `+${'var a=1;function b(c){return c<2?c:b(c-1)+b(c-2)}'.repeat(Math.ceil(chars / 48)).slice(0, chars)}`,
    ].join('\n') + '\n'
  );
}
