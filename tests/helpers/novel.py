# License: GPLv3 Copyright: the Book AI developers
"""The real novel the tests read: Jane Austen's Pride and Prejudice (1813, in the public domain),
its text as Debian's r-cran-janeaustenr ships it, made into an EPUB by calibre's own converter
(dev/make_test_novel.py), and questions written from it, each with where its answer is. Origin,
licence and the exact command: tests/books/SOURCE.md.

In the EPUB, and so in Book AI's reading of it, chapter 0 is the title page and chapter n is the
novel's Chapter n (1 to 61)."""

import html
import re
from collections.abc import Callable
from pathlib import Path

BOOKS = Path(__file__).resolve().parent.parent / 'books'
SOURCE = BOOKS / 'pride-and-prejudice.txt'
EPUB = BOOKS / 'pride-and-prejudice.epub'
QUESTIONS = BOOKS / 'pride-and-prejudice-questions.json'
TITLE, AUTHOR, AUTHOR_SORT, PUBLISHED = 'Pride and Prejudice', 'Jane Austen', 'Austen, Jane', '1813-01-28'
CHAPTERS = 61
CHAPTER = re.compile(r'^(Chapter \d+)$', re.M)
EMPHASIS = re.compile(r'_([^_]+)_')  # the source marks italics as _word_


def source_parts(text: str | None = None) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The source's front matter (its non-blank lines) and its chapters: (heading, paragraphs),
    each paragraph on one line, its emphasis marks kept."""
    text = SOURCE.read_text(encoding='ascii') if text is None else text
    front, *rest = CHAPTER.split(text)
    chapters = [(rest[i], [' '.join(p.split()) for p in re.split(r'\n\s*\n', rest[i + 1]) if p.strip()])
                for i in range(0, len(rest), 2)]
    return [line.strip() for line in front.splitlines() if line.strip()], chapters


def plain(paragraph: str) -> str:
    """A paragraph as a reader sees it: its emphasis marks gone (they are italics in the EPUB)."""
    return EMPHASIS.sub(r'\1', paragraph)


def source_html(text: str | None = None) -> str:
    """The HTML that calibre converts: the title page, then each chapter under an <h2> heading,
    a <p> per paragraph, the emphasis marks as <i>."""
    front, chapters = source_parts(text)
    out = [f'<html><head><title>{html.escape(TITLE)}</title></head><body>']
    out.append(f'<h1>{html.escape(front[0])}</h1>')
    out += [f'<p>{html.escape(line)}</p>' for line in front[1:]]
    for heading, paragraphs in chapters:
        out.append(f'<h2>{html.escape(heading)}</h2>')
        out += ['<p>' + EMPHASIS.sub(r'<i>\1</i>', html.escape(p, quote=False)) + '</p>' for p in paragraphs]
    out.append('</body></html>\n')
    return '\n'.join(out)


def many_copies_epub(folder: Path, copies: int = 8) -> Path:
    """An EPUB of the novel's chapters copies times over (8: about 5 MB of text), numbered on, made by
    calibre's ebook-convert in folder: the large book of the benchmarks."""
    import subprocess
    front, chapters = source_parts()
    text = '\n\n'.join(front) + '\n\n'
    n = 0
    for _copy in range(copies):
        for _heading, paragraphs in chapters:
            n += 1
            text += f'Chapter {n}\n\n' + '\n\n'.join(paragraphs) + '\n\n'
    (folder / 'big.html').write_text(source_html(text), encoding='utf-8')
    subprocess.run(['ebook-convert', 'big.html', 'big.epub', '--chapter', '//h:h2', '--level1-toc', '//h:h2',
                    '--no-default-epub-cover'], cwd=folder, check=True, capture_output=True)
    return folder / 'big.epub'


def question_set(book) -> tuple[list[dict], Callable[[dict], float]]:
    """The novel's question set (tests/books/pride-and-prejudice-questions.json, the spoiler probes left
    out), and where the reader is for each: at the end of the chapter it names, a fraction of book."""
    import json
    questions = [q for q in json.loads(QUESTIONS.read_text(encoding='utf-8'))['questions'] if not q['spoiler_probe']]
    ends = {}
    for p in book.paragraphs:
        ends[p.chapter] = p.start + len(p.text)

    def position_of(q: dict) -> float:
        return min(1.0, (ends[q['position']] + 1) / book.length)
    return questions, position_of
