#!/usr/bin/env python3
"""No function in src/ is longer than a limit (120 lines, braces included).

Reads C++ and CUDA sources as text: comments and literals are blanked, then
every brace opened at namespace or class scope that does not open a
namespace, class, struct, union, enum or initializer is a function body.
Usage: function_length.py SRC_DIR [LIMIT]; prints each function over the
limit and exits 1 if any is.
"""
import re
import sys
from pathlib import Path

SCOPE = re.compile(r'\b(namespace|class|struct|union|enum)\b|extern\s+"C"')
STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank(match):
    text = match.group(0)
    if text.startswith('"') or text.startswith("'"):
        return text[0] + re.sub(r'[^\n]', ' ', text[1:-1]) + text[-1]
    return re.sub(r'[^\n]', ' ', text)


def functions(text):
    """(name, first line, lines) of every function body in `text`."""
    code = STRIP.sub(blank, text)
    code = re.sub(r'(?m)^\s*#.*$', '', code)  # preprocessor lines
    stack = []  # 'scope' or ('function', start line, name) or 'block'
    head_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == '\n':
            line += 1
        elif c in ';':
            head_start = i + 1
        elif c == '{':
            head = code[head_start:i]
            in_function = any(isinstance(s, tuple) or s == 'block' for s in stack)
            if in_function:
                stack.append('block')
            elif SCOPE.search(head) and '(' not in head.split('{')[-1].split(')')[-1] or head.rstrip().endswith('='):
                stack.append('scope')
            elif '(' in head:
                name = re.findall(r'([~\w:]+)\s*\(', head)
                stack.append(('function', line, name[0] if name else '?'))
            else:
                stack.append('scope')
            head_start = i + 1
        elif c == '}':
            if stack:
                top = stack.pop()
                if isinstance(top, tuple):
                    yield top[2], top[1], line - top[1] + 1
            head_start = i + 1
    return


def main():
    root = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 120
    over = []
    for path in sorted(root.rglob('*')):
        if path.suffix not in ('.cpp', '.hpp', '.cu', '.h', '.cuh') or not path.is_file():
            continue
        for name, start, lines in functions(path.read_text()):
            if lines > limit:
                over.append((lines, f'{path.relative_to(root)}:{start}', name))
    for lines, where, name in sorted(over, reverse=True):
        print(f'{where}: {name} is {lines} lines (limit {limit})')
    print(f'{len(over)} functions over {limit} lines')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
