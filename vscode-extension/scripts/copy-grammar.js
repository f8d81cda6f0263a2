// Copies the TextMate grammar, kept once for every editor in ../grammars/, into the extension.
'use strict';
const fs = require('fs');
const path = require('path');

const source = path.join(__dirname, '..', '..', 'grammars', 'alpha.tmLanguage.json');
const target = path.join(__dirname, '..', 'syntaxes', 'alpha.tmLanguage.json');
JSON.parse(fs.readFileSync(source, 'utf8')); // refuse to ship a grammar that is not JSON
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.copyFileSync(source, target);
