// Copies the TextMate grammar, kept once for every editor in the repository's grammars/, into the
// extension's syntaxes/ (run by `npm run compile` and `npm run test:grammar`).
//
// Where the grammar comes from, first found:
//   1. $ALPHA_GRAMMAR, a path to alpha.tmLanguage.json (the folder built outside the repository);
//   2. ../grammars/alpha.tmLanguage.json (the folder inside the Alpha repository);
//   3. none: syntaxes/alpha.tmLanguage.json already there (copied before, or by hand) is kept.
// With none of the three it stops, saying so.
'use strict';
const fs = require('fs');
const path = require('path');

const repo = path.join(__dirname, '..', '..', 'grammars', 'alpha.tmLanguage.json');
const target = path.join(__dirname, '..', 'syntaxes', 'alpha.tmLanguage.json');
const given = process.env.ALPHA_GRAMMAR;

function grammar(file) {
  const parsed = JSON.parse(fs.readFileSync(file, 'utf8')); // refuse to ship a grammar that is not JSON
  if (parsed.scopeName !== 'source.alphadsl') {
    throw new Error(`${file}: scopeName is ${JSON.stringify(parsed.scopeName)}, not "source.alphadsl"`);
  }
}

const source = given ? path.resolve(given) : fs.existsSync(repo) ? repo : undefined;
if (source) {
  grammar(source);
  fs.mkdirSync(path.dirname(target), { recursive: true });
  if (path.resolve(source) !== path.resolve(target)) fs.copyFileSync(source, target);
} else if (fs.existsSync(target)) {
  grammar(target);
  console.error(
    `copy-grammar: ${repo} is missing (the folder is built outside the Alpha repository): ` +
      'keeping syntaxes/alpha.tmLanguage.json'
  );
} else {
  console.error(
    `copy-grammar: no grammar: ${repo} is missing (the folder is built outside the Alpha ` +
      'repository). Set ALPHA_GRAMMAR=/path/to/alpha.tmLanguage.json (the repository\'s ' +
      'grammars/alpha.tmLanguage.json) or copy that file to syntaxes/ first.'
  );
  process.exit(1);
}
