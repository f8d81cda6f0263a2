// Prints, as JSON, the problems the `$alpha` matcher (its patterns as package.json declares
// them, applied line after line as VS Code applies a multi-line matcher) finds in a file of
// task output. usage: node test/match-problems.js OUTPUT
'use strict';
const fs = require('fs');
const { contributes } = require('../package.json');

const [matcher] = contributes.problemMatchers;
const [head, where] = matcher.pattern;
const lines = fs.readFileSync(process.argv[2], 'utf8').split(/\r?\n/);
const found = [];
for (let i = 0; i + 1 < lines.length; i++) {
  const h = new RegExp(head.regexp).exec(lines[i]);
  const w = h && new RegExp(where.regexp).exec(lines[i + 1]);
  if (!w) continue;
  found.push({
    severity: h[head.severity],
    code: h[head.code],
    message: h[head.message],
    file: w[where.file],
    line: Number(w[where.line]),
    column: Number(w[where.column]),
  });
}
console.log(JSON.stringify({ owner: matcher.owner, fileLocation: matcher.fileLocation, found }));
