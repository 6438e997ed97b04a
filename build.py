#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Build Book AI. Plain Python 3.10 or newer; calibre is not needed.

    python3 build.py            write dist/bookai-<version>.zip and print its sha256
    python3 build.py stage      write build/stage/, the folder for `calibre-customize -b`
    python3 build.py pot        refresh translations/bookai.pot from the sources
    python3 build.py version    print the version

`--out` puts the zip (or the staged folder) in another folder, the template in another file.

The zip is reproducible: the same sources give the same bytes (sorted entries,
fixed dates and permissions, fixed compression). It holds the plugin's code,
plugin-import-name-bookai.txt, the compiled translations/*.mo and the images,
nothing else. The version lives in one place, the `version` literal of the
wrapper class in plugin/__init__.py.
"""

import ast
import hashlib
import io
import os
import shutil
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN = HERE / 'plugin'
TRANSLATIONS = HERE / 'translations'
IMPORT_NAME_FILE = 'plugin-import-name-bookai.txt'
POT = TRANSLATIONS / 'bookai.pot'
DIST = HERE / 'dist'
STAGE = HERE / 'build' / 'stage'

# What of plugin/ goes into the zip, by file ending.
SHIPPED_SUFFIXES = {'.py', '.png'}
ZIP_DATE = (2020, 1, 1, 0, 0, 0)


def read_version():
    tree = ast.parse((PLUGIN / '__init__.py').read_text(encoding='utf-8'))
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == 'version' for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit('plugin/__init__.py has no version literal')


# Translations ----------------------------------------------------------------

def parse_po(text):
    """The entries of a .po file: dicts with msgctxt, msgid, msgid_plural, msgstr (list), flags."""
    entries, cur, field, pending_flags = [], None, None, set()

    def start():
        nonlocal pending_flags
        if cur is not None and 'msgid' in cur:
            entries.append(cur)
        new, pending_flags = {'flags': pending_flags, 'msgstr': []}, set()
        return new

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith('#,'):
            pending_flags.update(f.strip() for f in line[2:].split(','))
        if not line or line.startswith('#'):
            continue
        keyword, _, rest = ('', '', line) if line.startswith('"') else line.partition(' ')
        try:
            value = ast.literal_eval(rest.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f'line {lineno}: cannot read {raw!r}') from None
        if not keyword:
            if field is None:
                raise ValueError(f'line {lineno}: a continuation with nothing to continue')
            if isinstance(field, int):
                cur['msgstr'][field] += value
            else:
                cur[field] += value
            continue
        if keyword == 'msgctxt' or (keyword == 'msgid' and (cur is None or 'msgid' in cur)):
            cur = start()
        if cur is None:
            raise ValueError(f'line {lineno}: {keyword} before any msgid')
        if keyword.startswith('msgstr'):
            field = int(keyword[7:-1]) if keyword.startswith('msgstr[') else 0
            cur['msgstr'].extend([''] * (field + 1 - len(cur['msgstr'])))
            cur['msgstr'][field] = value
        elif keyword in ('msgctxt', 'msgid', 'msgid_plural'):
            cur[keyword] = value
            field = keyword
        else:
            raise ValueError(f'line {lineno}: unknown keyword {keyword!r}')
    start()
    return entries


def compile_mo(entries):
    """GNU .mo bytes for the translated, non-fuzzy entries (as msgfmt writes them)."""
    messages = {}
    for e in entries:
        if 'fuzzy' in e['flags'] and e['msgid']:
            continue
        strs = e['msgstr'] or ['']
        if not any(strs) and e['msgid']:
            continue
        key = e['msgid']
        if 'msgid_plural' in e:
            key += '\0' + e['msgid_plural']
        if 'msgctxt' in e:
            key = e['msgctxt'] + '\x04' + key
        messages[key.encode('utf-8')] = '\0'.join(strs).encode('utf-8')
    keys = sorted(messages)
    ids = strs = b''
    offsets = []
    for k in keys:
        offsets.append((len(ids), len(k), len(strs), len(messages[k])))
        ids += k + b'\0'
        strs += messages[k] + b'\0'
    n = len(keys)
    keystart = 7 * 4 + 16 * n
    valuestart = keystart + len(ids)
    koffsets, voffsets = [], []
    for o1, l1, o2, l2 in offsets:
        koffsets += [l1, o1 + keystart]
        voffsets += [l2, o2 + valuestart]
    import array
    out = io.BytesIO()
    out.write(array.array('I', [0x950412de, 0, n, 7 * 4, 7 * 4 + n * 8, 0, 0]).tobytes())
    out.write(array.array('I', koffsets).tobytes())
    out.write(array.array('I', voffsets).tobytes())
    out.write(ids)
    out.write(strs)
    return out.getvalue()


def compiled_translations():
    """{'translations/de.mo': bytes, ...} for every translations/*.po."""
    return {f'translations/{po.stem}.mo': compile_mo(parse_po(po.read_text(encoding='utf-8')))
            for po in sorted(TRANSLATIONS.glob('*.po'))}


def po_quote(s):
    out = s.replace('\\', '\\\\').replace('"', '\\"').replace('\t', '\\t')
    if '\n' in out[:-1]:
        lines = out.split('\n')
        parts = [ln + '\\n' for ln in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        return '""\n' + '\n'.join(f'"{p}"' for p in parts)
    return '"' + out.replace('\n', '\\n') + '"'


def extract_messages():
    """The translatable strings of plugin/: _('…') and ngettext('…', '…', n) calls."""
    found = {}
    for path in sorted(PLUGIN.rglob('*.py')):
        rel = path.relative_to(HERE).as_posix()
        tree = ast.parse(path.read_text(encoding='utf-8'), filename=rel)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            args = node.args
            if node.func.id == '_' and len(args) == 1:
                key = (args[0],)
            elif node.func.id == 'ngettext' and len(args) == 3:
                key = (args[0], args[1])
            else:
                continue
            if not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in key):
                raise SystemExit(f'{rel}:{node.lineno}: {node.func.id}() needs string literals')
            key = tuple(a.value for a in key)
            found.setdefault(key, []).append((rel, node.lineno))
    return found


def write_pot(dest=POT):
    lines = [
        '# Translations template for Book AI.',
        '# This file is distributed under the same license as Book AI (GPL v3).',
        'msgid ""', 'msgstr ""',
        f'"Project-Id-Version: Book AI {".".join(map(str, read_version()))}\\n"',
        '"MIME-Version: 1.0\\n"', '"Content-Type: text/plain; charset=UTF-8\\n"',
        '"Content-Transfer-Encoding: 8bit\\n"', '',
    ]
    messages = extract_messages()
    for key, places in sorted(messages.items(), key=lambda kv: sorted(kv[1])[0]):
        for rel, lineno in sorted(places):
            lines.append(f'#: {rel}:{lineno}')
        if any('{' in k for k in key):
            lines.append('#, python-brace-format')
        lines.append('msgid ' + po_quote(key[0]))
        if len(key) == 2:
            lines += ['msgid_plural ' + po_quote(key[1]), 'msgstr[0] ""', 'msgstr[1] ""']
        else:
            lines.append('msgstr ""')
        lines.append('')
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text('\n'.join(lines), encoding='utf-8')
    print(f'{dest}: {len(messages)} messages')


# The zip ---------------------------------------------------------------------

def shipped_files():
    """{name in zip: bytes}, everything the plugin zip holds."""
    files = {}
    for path in sorted(PLUGIN.rglob('*')):
        rel = path.relative_to(PLUGIN)
        if not path.is_file() or '__pycache__' in rel.parts or any(p.startswith('.') for p in rel.parts):
            continue
        if path.suffix not in SHIPPED_SUFFIXES:
            continue
        files[rel.as_posix()] = path.read_bytes()
    files[IMPORT_NAME_FILE] = (HERE / IMPORT_NAME_FILE).read_bytes()
    files.update(compiled_translations())
    return files


def build_zip(out=DIST):
    version = '.'.join(map(str, read_version()))
    out.mkdir(parents=True, exist_ok=True)
    dest = out / f'bookai-{version}.zip'
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w') as zf:
        for name, data in sorted(shipped_files().items()):
            info = zipfile.ZipInfo(name, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            zf.writestr(info, data, compresslevel=9)
    data = buf.getvalue()
    tmp = dest.with_suffix('.tmp')
    tmp.write_bytes(data)
    os.replace(tmp, dest)
    print(f'{dest}  sha256 {hashlib.sha256(data).hexdigest()}')
    return dest


def stage(out=STAGE):
    if out.exists():
        shutil.rmtree(out)
    for name, data in shipped_files().items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    print(out)
    return out


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('command', nargs='?', default='zip', choices=('zip', 'stage', 'pot', 'version'))
    ap.add_argument('--out', type=Path, help='the folder for the zip or the staged folder; the file for the template')
    a = ap.parse_args(argv[1:])
    if a.command == 'zip':
        build_zip(a.out or DIST)
    elif a.command == 'stage':
        stage(a.out or STAGE)
    elif a.command == 'pot':
        write_pot(a.out or POT)
    else:
        print('.'.join(map(str, read_version())))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
