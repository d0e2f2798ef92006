// devil-text.mjs — the training text of the next-character models: Ambrose Bierce, "The
// Devil's Dictionary" (1911; public domain, copyright expired), as the Debian package
// dict-devil ships it (/usr/share/dictd/devil.dict.dz, dictzip = gzip-compatible). The
// dictd database wraps the book in a header ("00-database-..." entries) and ends with an
// index line of the alphabet; the text kept runs from the preface to the last entry
// (ZOOLOGY). The core encodes it (train/text.hpp: lower case, whitespace runs -> one space).
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';

/** Where dict-devil installs the book; QKSCOPE_DEVIL_DICT overrides it (a copy elsewhere). */
export const devilDictPath = process.env.QKSCOPE_DEVIL_DICT || '/usr/share/dictd/devil.dict.dz';

/** The book's text (ASCII), from the preface to the last entry. Throws when the file is missing. */
export function devilText(path = devilDictPath) {
  let raw;
  try {
    raw = readFileSync(path);
  } catch (e) {
    throw new Error(`${path}: ${e.code || e.message}: install the Debian package dict-devil ` +
      '(scripts/ensure-deps.sh) or set QKSCOPE_DEVIL_DICT to a copy of devil.dict.dz');
  }
  const all = gunzipSync(raw).toString('latin1');
  const start = all.indexOf('_The Devil\'s Dictionary_ was begun');
  const end = all.lastIndexOf('\n abcdefghijklmnopqrstuvwxyz');
  if (start < 0 || end < start) throw new Error(`${path}: not the dict-devil database (preface or index line not found)`);
  return all.slice(start, end + 1);
}
