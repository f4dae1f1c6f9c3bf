#!/usr/bin/env python3
"""Every `unsafe` block, `unsafe impl` and `unsafe fn` in crates/**/*.rs says why it is sound.

A site passes when a `// SAFETY:` comment is on its line, or in the comment lines right
above it (through attributes, doc comments and blank-free comment runs), or above at most
two continuation lines of the same expression (`let x =` / `foo(` ... then `unsafe {`).
For an `unsafe fn`, a `# Safety` section in its doc comment counts too (the caller's
contract).

Usage: scripts/check_safety.py [ROOT]   (ROOT: the repository, default: this script's ..)
Exit status 1 and one `file:line: text` per site without a comment; 0 when all have one.
"""

import pathlib
import re
import sys

# `unsafe {`, `unsafe impl`, `unsafe fn`, `unsafe extern "C" fn` (not `unsafe extern` blocks
# of declarations). Matched on code with comments and string literals blanked out.
# A function pointer type (`unsafe extern "C" fn(usize)`) is no site: `fn` then a name.
SITE = re.compile(r'\bunsafe\s*(\{|impl\b|fn\s+\w|extern\s+"[^"]*"\s+fn\s+\w)')
# How many lines of the same expression may separate the comment from the site.
MAX_CONTINUATION = 2


def strip_code(line: str) -> str:
    """The line without its `//` comment and with string/char literal contents blanked."""
    out = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "/" and line.startswith("//", i):
            break
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            out.append('""')
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def is_comment(s: str) -> bool:
    return s.startswith("//")


def is_attribute(s: str) -> bool:
    return s.startswith("#[") or s.startswith("#![")


def has_safety(s: str, fn_site: bool) -> bool:
    return "SAFETY:" in s or (fn_site and "# Safety" in s)


def ok(lines: list, k: int, fn_site: bool) -> bool:
    if has_safety(lines[k], fn_site) and "//" in lines[k]:
        return True
    continuation = 0
    j = k - 1
    while j >= 0:
        s = lines[j].strip()
        if is_comment(s):
            if has_safety(s, fn_site):
                return True
        elif is_attribute(s):
            pass
        elif s == "":
            return False
        else:
            code = strip_code(s).rstrip()
            # A statement boundary or another unsafe site: a comment further up is theirs.
            if (code.endswith((";", "{", "}", ",")) or SITE.search(code)
                    or continuation >= MAX_CONTINUATION):
                return False
            continuation += 1
        j -= 1
    return False


def check(root: pathlib.Path) -> list:
    bad = []
    for path in sorted((root / "crates").rglob("*.rs")):
        if "target" in path.relative_to(root).parts:
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        for k, line in enumerate(lines):
            code = strip_code(line)
            m = SITE.search(code)
            if not m:
                continue
            fn_site = m.group(1) not in ("{", "impl")
            if not ok(lines, k, fn_site):
                bad.append(f"{path.relative_to(root)}:{k + 1}: {line.strip()}")
    return bad


def main() -> int:
    here = pathlib.Path(__file__).resolve().parent.parent
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here
    bad = check(root)
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} unsafe site(s) without a `// SAFETY:` comment", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
