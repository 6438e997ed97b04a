#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Fill the untranslated entries of a .po file from a Python dict of msgid: msgstr.

    python3 dev/fill_po.py translations/de.po translations-de.py

A translator's helper: the file defines one upper-case dict (DE, FR, ...). Entries
already translated are left alone; msgids not in the .po are reported. A plural entry
(msgid_plural) takes a list of its forms, in the order of the language's Plural-Forms.
"""

import ast
import runpy
import sys


def po_quote(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n').replace('\t', '\\t') + '"'


def main(po_path, dict_path):
    table = next(v for k, v in runpy.run_path(dict_path).items() if k.isupper() and isinstance(v, dict))
    lines = open(po_path, encoding='utf-8').read().split('\n')
    out, i, used = [], 0, set()
    while i < len(lines):
        line = lines[i]
        if line.startswith('msgid "') and i + 1 < len(lines):
            # gather a possibly multi-line msgid
            j, parts = i, [line[6:]]
            while j + 1 < len(lines) and lines[j + 1].startswith('"'):
                j += 1
                parts.append(lines[j])
            msgid = ''.join(ast.literal_eval(p) for p in parts)
            out.extend(lines[i:j + 1])
            k = j + 1
            if k < len(lines) and lines[k].startswith('msgid_plural "'):  # a plural: a list of forms in the table
                while k + 1 < len(lines) and lines[k + 1].startswith('"'):
                    k += 1
                out.extend(lines[j + 1:k + 1])
                k += 1
                forms = table.get(msgid)
                while k < len(lines) and lines[k].startswith('msgstr['):
                    n = int(lines[k][7:lines[k].index(']')])
                    if isinstance(forms, (list, tuple)) and lines[k].endswith('""'):
                        out.append(f'msgstr[{n}] ' + po_quote(forms[min(n, len(forms) - 1)]))
                        used.add(msgid)
                    else:
                        out.append(lines[k])
                    k += 1
                i = k
                continue
            if k < len(lines) and lines[k] == 'msgstr ""' and (k + 1 >= len(lines) or not lines[k + 1].startswith('"')) \
                    and msgid in table:
                out.append('msgstr ' + po_quote(table[msgid]))
                used.add(msgid)
                i = k + 1
                continue
            i = j + 1
            continue
        out.append(line)
        i += 1
    open(po_path, 'w', encoding='utf-8').write('\n'.join(out))
    unused = set(table) - used
    print(f'{len(used)} filled; {len(unused)} given but not needed')
    for m in sorted(unused):
        print('  not needed:', m)


if __name__ == '__main__':
    main(*sys.argv[1:3])
