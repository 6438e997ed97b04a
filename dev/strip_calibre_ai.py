#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Remove calibre's built-in AI from an installed calibre 9.17, the way an AI-free fork does.

    python3 dev/strip_calibre_ai.py ROOT/usr/lib/calibre/calibre

Run it on a copy of a root (dev/hosts.py copies the forky root first), never on a live system.
It deletes calibre.ai (all providers), the AI chat, "Discuss book with AI", "AI generate cover"
and "Create your own adventure" modules and their icons, then removes every reference to them
from the rest of calibre and from its resources (ROOT/usr/share/calibre).

Every edit is an exact string that must occur exactly once: when calibre changes, the script
stops with a message naming the file and the text it could not find, rather than half-patching.
Stdlib only; it runs on the machine's own python3, not calibre's.
"""

import re
import shutil
import struct
import sys
from collections import deque
from pathlib import Path


class StripError(Exception):
    pass


# helpers {{{

def check(ok, msg):
    if not ok:
        raise StripError(msg)


def drop_bytecode(path):
    """Delete the cached bytecode of the module at path (a .py file)."""
    for pyc in (path.parent / '__pycache__').glob(path.stem + '.*.pyc'):
        pyc.unlink()


def delete(path):
    check(path.exists(), f'{path} is missing')
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
        if path.suffix == '.py':
            drop_bytecode(path)


def replace(text, old, new, where):
    n = text.count(old)
    check(n == 1, f'{where}: expected exactly one occurrence of {old!r}, found {n}')
    return text.replace(old, new)


def cut(text, start, end, where):
    """Remove everything from start up to and including the first end after it."""
    n = text.count(start)
    check(n == 1, f'{where}: expected exactly one occurrence of {start!r}, found {n}')
    a = text.index(start)
    b = text.find(end, a + len(start))
    check(b > -1, f'{where}: {end!r} not found after {start!r}')
    return text[:a] + text[b + len(end):]


class Edit:
    """with Edit(path) as e: e.text = replace(e.text, ...); written back only if all edits matched."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        check(self.path.is_file(), f'{self.path} is missing')
        with open(self.path, encoding='utf-8', newline='') as f:
            self.text = self.original = f.read()
        return self

    def replace(self, old, new=''):
        self.text = replace(self.text, old, new, self.path)

    def cut(self, start, end):
        self.text = cut(self.text, start, end, self.path)

    def __exit__(self, exc_type, *a):
        if exc_type is None:
            check(self.text != self.original, f'{self.path}: nothing changed')
            with open(self.path, 'w', encoding='utf-8', newline='') as f:
                f.write(self.text)
            drop_bytecode(self.path)

# }}}


# deleted modules and resources {{{

AI_MODULES = (
    'ai',                        # AIProviderPlugin backends, prefs, utils, config, structured output
    'gui2/llm.py',               # the AI conversation panel
    'gui2/chat_widget.py',       # its chat display, used by nothing else
    'gui2/viewer/llm.py',        # the viewer's "Ask AI" panel
    'gui2/actions/llm_book.py',  # "Discuss book with AI"
    'gui2/dialogs/llm_book.py',
    'gui2/actions/llm_cover.py',  # "AI generate cover"
    'gui2/dialogs/llm_cover.py',
    'gui2/actions/cyoa.py',      # "Create your own adventure"
    'gui2/cyoa',
)

AI_ICONS = ('ai.png', 'cyoa.png')


def delete_modules(pkg):
    for rel in AI_MODULES:
        delete(pkg / rel)


def delete_icons(share):
    for name in AI_ICONS:
        delete(share / 'images' / name)


def delete_launcher(root):
    # Debian does not install calibre-cyoa; other builds might
    launcher = root / 'usr/bin/calibre-cyoa'
    if launcher.exists() or launcher.is_symlink():
        launcher.unlink()

# }}}


# calibre.customize {{{

def patch_customize_init(pkg):
    with Edit(pkg / 'customize/__init__.py') as e:
        e.replace('import builtins\n')
        e.replace('from typing import TYPE_CHECKING\n')
        e.cut('if TYPE_CHECKING:\n', ') = AICapabilities = None\n\n')
        e.cut('class AIProviderPlugin(Plugin):  # {{{\n', '# }}}\n\n\n')


def patch_customize_ui(pkg):
    with Edit(pkg / 'customize/ui.py') as e:
        e.replace('from collections.abc import Iterator\n')
        e.replace('    AIProviderPlugin,\n')
        e.cut('# AI Provider Plugins {{{\n', '# }}}\n\n')


def patch_customize_builtins(pkg):
    with Edit(pkg / 'customize/builtins.py') as e:
        e.cut('from calibre.ai.anthropic import AnthropicAI\n', 'from calibre.ai.venice import VeniceAI\n')
        for cls in ('ActionLLMBook', 'ActionAIGenerateCover', 'ActionCYOA'):
            e.cut(f'class {cls}(InterfaceActionBase):\n', '\n\n\n')
            e.replace(f'    {cls},\n')
        e.replace('plugins.extend((OpenRouterAI, GoogleAI, AnthropicAI, OllamaAI, LMStudioAI, OpenAI, OpenAICompatible, GrokAI, VeniceAI))\n\n')

# }}}


# main window: actions, metadata editors {{{

def patch_similar_books(pkg):
    # the "Ask AI for what to read next" entry of the Similar books menu
    with Edit(pkg / 'gui2/actions/similar_books.py') as e:
        e.replace('from calibre.utils.config import tweaks\n')
        e.cut("        ac = self.create_action(spec=(_('Ask AI for what to read next')", "        ac.setVisible(not tweaks['hide_ai_features'])\n")
        e.cut('    def ask_ai(self):\n', "ask_ai_with_action(read_next_action())\n\n")


def patch_view_action(pkg):
    # the "Discuss selected book(s) with AI" entry of the View menu
    with Edit(pkg / 'gui2/actions/view.py') as e:
        e.cut("        self.llm_action = cm('llm-book'", "        self.llm_action.setVisible(not tweaks['hide_ai_features'])\n")
        e.replace('        self.view_menu.aboutToShow.connect(self.about_to_show_menu)\n')
        e.cut('    def about_to_show_menu(self):\n', 'sc.toString(QKeySequence.SequenceFormat.NativeText))\n\n')
        e.replace("    def ask_ai(self):\n        self.gui.iactions['Discuss book with AI'].ask_ai()\n\n")


def patch_metadata_bulk(pkg):
    # the "AI generate covers" choice of the bulk metadata editor
    with Edit(pkg / 'gui2/dialogs/metadata_bulk.py') as e:
        e.replace("{'remove', 'generate', 'trim', 'clone', 'ai_generate'}", "{'remove', 'generate', 'trim', 'clone'}")
        e.cut("        elif args.cover_action == 'ai_generate':\n", '            self.progress_finished_cur_step.emit()\n\n')
        e.replace("        if tweaks['hide_ai_features']:\n            self.cover_ai_generate.setVisible(False)\n")
        e.replace("        elif self.cover_ai_generate.isChecked():\n            cover_action = 'ai_generate'\n")


def patch_metadata_bulk_ui(pkg):
    with Edit(pkg / 'gui2/dialogs/metadata_bulk_ui.py') as e:
        e.replace(
            '        self.cover_ai_generate = QtWidgets.QRadioButton(parent=self.groupBox)\n'
            '        self.cover_ai_generate.setObjectName("cover_ai_generate")\n'
            '        self.horizontalLayout_9.addWidget(self.cover_ai_generate)\n')
        e.replace(
            '        MetadataBulkDialog.setTabOrder(self.cover_clone, self.cover_ai_generate)\n'
            '        MetadataBulkDialog.setTabOrder(self.cover_ai_generate, self.button_config_cover_gen)\n',
            '        MetadataBulkDialog.setTabOrder(self.cover_clone, self.button_config_cover_gen)\n')
        e.cut('        self.cover_ai_generate.setToolTip(', '        self.cover_ai_generate.setText(_("AI &generate covers"))\n')


def patch_basic_widgets(pkg):
    # the "AI Generate" cover button of the single book metadata editor
    with Edit(pkg / 'gui2/metadata/basic_widgets.py') as e:
        e.replace(
            "        if not tweaks['hide_ai_features']:\n"
            "            self.ai_generate_cover_button = CB(_('&AI Generate'), 'ai.png', self.generate_cover_with_ai)\n"
            "            self.buttons.append(self.ai_generate_cover_button)\n")
        e.cut('    def generate_cover_with_ai(self):\n', '            self.current_val = d.cover_data\n\n')

# }}}


# the viewer's Lookup panel loses its "Ask AI" tab {{{

def patch_viewer_lookup(pkg):
    with Edit(pkg / 'gui2/viewer/lookup.py') as e:
        e.replace('from calibre.utils.config import tweaks\n')
        e.replace("vprefs.defaults['llm_lookup_tab_index'] = 0\n")
        e.replace('        self.llm_panel = None\n        self.llm_tab_index = -1\n')
        e.cut('        self.llm_container = QWidget(self)\n', "not tweaks['hide_ai_features'])\n\n")
        e.replace(
            "        self.current_book_metadata = book_data.get('metadata', {})\n"
            '        if self.llm_panel:\n'
            '            self.llm_panel.update_book_metadata(self.current_book_metadata)\n',
            "        self.current_book_metadata = book_data.get('metadata', {})\n")
        e.cut('    def _activate_llm_panel(self):\n', '        self.llm_panel.update_with_text(self.selected_text)\n\n')
        e.replace(
            "        vprefs.set('llm_lookup_tab_index', index)\n"
            '        if index == self.llm_tab_index:\n'
            '            self._activate_llm_panel()\n')
        e.cut(
            '        if is_visible:\n'
            "            last_idx = vprefs.get('llm_lookup_tab_index', 0)\n",
            '                self.llm_panel.update_book_metadata(self.current_book_metadata)\n')
        e.replace(
            '        current_idx = self.currentIndex()\n'
            '        if current_idx == self.llm_tab_index:\n'
            '            if self.llm_panel:\n'
            '                self.llm_panel.update_with_text(self.selected_text)\n'
            '        else:\n'
            '            query = self.selected_text or self.current_query\n'
            '            if self.query_is_up_to_date or not query:\n'
            '                return\n'
            '            self.current_source = self.url_template\n'
            '            sp = self.special_processor\n'
            '            if sp is None:\n'
            '                url = self.current_source.format(word=query)\n'
            '            else:\n'
            '                url = sp(query)\n'
            '\n'
            '            self.view.load(QUrl(url))\n'
            '            self.current_query = query\n'
            '            self.update_refresh_button_status()\n',
            '        query = self.selected_text or self.current_query\n'
            '        if self.query_is_up_to_date or not query:\n'
            '            return\n'
            '        self.current_source = self.url_template\n'
            '        sp = self.special_processor\n'
            '        if sp is None:\n'
            '            url = self.current_source.format(word=query)\n'
            '        else:\n'
            '            url = sp(query)\n'
            '\n'
            '        self.view.load(QUrl(url))\n'
            '        self.current_query = query\n'
            '        self.update_refresh_button_status()\n')
        e.replace(
            '        if self.selected_text and self.currentIndex() == self.llm_tab_index:\n'
            "            self.viewer_parent.web_view.generic_action('suppress-selection-popup', True)\n\n")
        e.replace(
            '        self.update_refresh_button_status()\n'
            '        if self.llm_panel:\n'
            '            self.llm_panel.update_with_text(self.selected_text)\n',
            '        self.update_refresh_button_status()\n')

# }}}


# the "Create your own adventure" program {{{

def patch_gui_launch(pkg):
    with Edit(pkg / 'gui_launch.py') as e:
        e.cut('@media_pack_error_check\ndef cyoa(args=sys.argv):\n', '    main(args)\n\n\n')


def patch_ipc_worker(pkg):
    with Edit(pkg / 'utils/ipc/worker.py') as e:
        e.replace("    'cyoa': ('calibre.gui_launch', 'cyoa', None),\n")


def patch_ipc_init(pkg):
    with Edit(pkg / 'utils/ipc/__init__.py') as e:
        e.replace("\n\ndef cyoa_socket_address():\n    return socket_address('CYOA' if iswindows else 'cyoa')\n")


def patch_constants(pkg):
    with Edit(pkg / 'constants.py') as e:
        e.replace("CYOA_APP_UID = 'com.calibre-ebook.cyoa'\n")


def patch_gui2_main(pkg):
    # calibre --add-and-delete stays (a general option), its comment named the game
    with Edit(pkg / 'gui2/main.py') as e:
        e.replace(
            '        # Deleting files is only safe to do for the temporary files this option\n'
            '        # exists for, see calibre.gui2.cyoa.read.ReadStoryDialog.export_epub()\n',
            '        # Deleting files is only safe to do for temporary files\n')

# }}}


# tests, tweaks, icons {{{

def patch_run_tests(pkg):
    with Edit(pkg / 'utils/run_tests.py') as e:
        e.cut("    if ok('ai'):\n", "        from calibre.gui2.cyoa.epub import find_tests\n\n        a(find_tests())\n")


def patch_default_tweaks(share):
    with Edit(share / 'default_tweaks.py') as e:
        e.replace(
            '# negative number to increase or decrease the font size. Similarly, change the\n'
            '# font size of the widget used to converse with AI.\n'
            'change_book_details_font_size_by = 0\n'
            'change_ai_chat_font_size_by = 0\n',
            '# negative number to increase or decrease the font size.\n'
            'change_book_details_font_size_by = 0\n')
        e.cut('#: Hide AI features\n', 'hide_ai_features = False\n\n')


def patch_images_qrc(share):
    with Edit(share / 'images.qrc') as e:
        for name in AI_ICONS:
            e.replace(f'<file>images/{name}</file>\n')


def rcc_without(data, drop):
    """Return the Qt resource file data without the files at the paths in drop.

    Format (Qt's rcc, version 2 or 3): header 'qres', version, tree, data and names offsets.
    The tree is an array of 22 byte nodes, root first, each directory's children contiguous:
    name offset (u32), flags (u16), then for a directory child count and first child index
    (u32, u32), for a file territory, language (u16, u16) and data offset (u32); then mtime (u64).
    The tree is rebuilt without the dropped files; their (now unreferenced) data stays.
    """
    check(data[:4] == b'qres', 'icons.rcc is not a Qt resource file')
    version, tree, payload, names = struct.unpack('>IIII', data[4:20])
    check(version in (2, 3), f'icons.rcc: unsupported format version {version}')
    size = 22
    check(tree > max(payload, names) and (len(data) - tree) % size == 0, 'icons.rcc: the tree is not at the end of the file')

    def node(i):
        return data[tree + i * size: tree + (i + 1) * size]

    def name(i):
        off = names + struct.unpack('>I', node(i)[:4])[0]
        length = struct.unpack('>H', data[off:off + 2])[0]
        return data[off + 6: off + 6 + 2 * length].decode('utf-16-be')

    def children(i):
        flags = struct.unpack('>H', node(i)[4:6])[0]
        if not flags & 0x2:
            return None
        count, first = struct.unpack('>II', node(i)[6:14])
        return range(first, first + count)

    order, paths, found = [0], {0: ''}, set()
    records = {}
    queue = deque([0])
    while queue:
        i = queue.popleft()
        kids = children(i)
        if kids is None:
            records[i] = node(i)
            continue
        keep = []
        for k in kids:
            paths[k] = paths[i] + '/' + name(k)
            if paths[k] in drop and children(k) is None:
                found.add(paths[k])
            else:
                keep.append(k)
        records[i] = node(i)[:6] + struct.pack('>II', len(keep), len(order)) + node(i)[14:]
        order.extend(keep)
        queue.extend(keep)
    check(found == set(drop), f'icons.rcc: not found: {sorted(set(drop) - found)}')
    return data[:tree] + b''.join(records[i] for i in order)


def patch_icons_rcc(share):
    path = share / 'icons.rcc'
    check(path.is_file(), f'{path} is missing')
    drop = {f'/icons/calibre-default/images/{name}' for name in AI_ICONS}
    path.write_bytes(rcc_without(path.read_bytes(), drop))

# }}}


# final check {{{

LEFTOVER = re.compile(r'calibre\.ai\b|\bllm|LLM|cyoa|CYOA|AIProvider|ai_provider|ai\.png|hide_ai_features|ai_chat|ai_generate|with AI')


def check_leftovers(pkg, share):
    files = sorted(pkg.rglob('*.py')) + [share / 'default_tweaks.py', share / 'images.qrc']
    hits = []
    for path in files:
        for lnum, line in enumerate(path.read_text(encoding='utf-8', errors='replace').splitlines(), 1):
            if LEFTOVER.search(line):
                hits.append(f'{path}:{lnum}: {line.strip()}')
    check(not hits, 'references to the removed AI remain:\n' + '\n'.join(hits))

# }}}


def strip(pkg):
    pkg = pkg.resolve()
    check(pkg.parts[-4:] == ('usr', 'lib', 'calibre', 'calibre'), f'{pkg} is not ROOT/usr/lib/calibre/calibre')
    root = pkg.parents[3]
    check(root != Path('/'), 'refusing to strip the live system: give the path inside a copy of a root')
    share = root / 'usr/share/calibre'
    check((pkg / 'ai/__init__.py').is_file(), f'{pkg} has no calibre.ai: not a calibre with AI, or already stripped')

    delete_modules(pkg)
    patch_customize_init(pkg)
    patch_customize_ui(pkg)
    patch_customize_builtins(pkg)
    patch_similar_books(pkg)
    patch_view_action(pkg)
    patch_metadata_bulk(pkg)
    patch_metadata_bulk_ui(pkg)
    patch_basic_widgets(pkg)
    patch_viewer_lookup(pkg)
    patch_gui_launch(pkg)
    patch_ipc_worker(pkg)
    patch_ipc_init(pkg)
    patch_constants(pkg)
    patch_gui2_main(pkg)
    patch_run_tests(pkg)
    patch_default_tweaks(share)
    delete_icons(share)
    patch_images_qrc(share)
    patch_icons_rcc(share)
    delete_launcher(root)
    check_leftovers(pkg, share)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit(__doc__)
    try:
        strip(Path(argv[0]))
    except StripError as err:
        raise SystemExit(f'strip_calibre_ai: {err}')
    print(f'strip_calibre_ai: removed calibre\'s AI from {argv[0]}')


if __name__ == '__main__':
    main()
