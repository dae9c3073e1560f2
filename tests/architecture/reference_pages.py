#!/usr/bin/env python3
"""The reference pages read in an hour, and they and the code state what is
true now (docs/decisions/0011-history-out-of-the-reference.md).

- README.md, docs/methodology.md, docs/architecture.md, docs/table.md and
  docs/cluster.md: at most 600 lines each and 1,500 in all;
- in those pages and in src/: no commit hash, no "round N" and no date.
Usage: reference_pages.py REPO_ROOT; prints each finding, exits 1 if any.
"""
import re
import sys
from pathlib import Path

PAGES = ['README.md', 'docs/methodology.md', 'docs/architecture.md', 'docs/table.md', 'docs/cluster.md']
PAGE_LIMIT, TOTAL_LIMIT = 600, 1500
CODE = ('.cpp', '.hpp', '.cu', '.h', '.c', '.in', '.html', '.py', '.cmake', '.txt')

HISTORY = [
    ('a commit hash', re.compile(r'(?<![\w.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w.])')),
    ('a round number', re.compile(r'\brounds? \d+', re.I)),
    ('a date', re.compile(r'\b20\d\d-\d\d-\d\d\b')),
]
# Not history: hexadecimal literals, UUID-like examples and lock-file integrity hashes.
ALLOWED = re.compile(r'0x[0-9a-fA-F]+|GPU-[0-9a-f-]+|sha\d+-\S+')


def findings(path, text):
    for number, line in enumerate(text.splitlines(), 1):
        plain = ALLOWED.sub('', line)
        for what, pattern in HISTORY:
            match = pattern.search(plain)
            if match:
                yield f'{path}:{number}: {what} ({match.group(0)}): {line.strip()[:100]}'


def main():
    root = Path(sys.argv[1])
    problems = []
    total = 0
    for page in PAGES:
        text = (root / page).read_text()
        lines = len(text.splitlines())
        total += lines
        if lines > PAGE_LIMIT:
            problems.append(f'{page}: {lines} lines (at most {PAGE_LIMIT})')
        problems.extend(findings(page, text))
    if total > TOTAL_LIMIT:
        problems.append(f'reference pages: {total} lines in all (at most {TOTAL_LIMIT})')
    for path in sorted((root / 'src').rglob('*')):
        if path.is_file() and path.suffix in CODE:
            problems.extend(findings(path.relative_to(root), path.read_text(errors='replace')))
    for problem in problems:
        print(problem)
    print(f'{len(problems)} findings; reference pages {total} lines')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
