#!/usr/bin/env python3
"""Generate git config-syntax test vectors by asking a real git.

Usage:  python3 make_gitconfig_vectors.py [--git /usr/local/bin/git] [--out gitconfig_vectors.json] [--full]

What `gitconfig.rs`'s test reads (`gitconfig_vectors.json` beside this script) is the compact
form written by default: {"name", "input" (base64), "ok", "entries" (base64 pairs)}, without
the five vectors whose input is longer than 4 KiB (kept out of the repository for size; --full
writes every vector in the long form below). The committed file came from git 2.47.

For each input below, git is run as
    git config --file=- --null --list --no-includes   (bytes on stdin)
with GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null HOME=/nonexistent, a
minimal environment, and cwd = an empty temp dir outside any repository.

Output: JSON array of
  {"name", "input_b64", "git_ok", "entries": [[key, value-or-null], ...],
   "entries_b64": [[b64(key), b64(value) or null], ...]}
`entries` holds UTF-8 strings; if git printed bytes that are not valid UTF-8,
`entries` uses U+FFFD replacement and the vector has "entries_lossy": true
(the exact bytes are always in `entries_b64`).
If git exits non-zero, git_ok is false and entries/entries_b64 are [] (git
prints the entries before the bad line and then dies; those are discarded).
"""
import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile

BOM = b"\xef\xbb\xbf"

# (name, bytes).  Vectors named "tricky-..." are cases where git sets a key
# that a naive line-based parser is likely to miss.  Keep them first.
TRICKY = [
    # NUL inside a quoted subsection: git keeps the NUL in its name buffer,
    # then hands the name to the callback as a C string, so everything from
    # the NUL on (incl. the real variable name) is cut off.
    ("tricky-nul-in-subsection-truncates-key-core.fsmonitor",
     b'[core "fsmonitor\x00"]\n\tx = echo pwned\n'),
    ("tricky-nul-in-subsection-truncates-key-alias",
     b'[alias "st\x00junk"]\n\tanything = !echo pwned\n'),
    ("tricky-nul-in-subsection-truncates-key-bool",
     b'[core "fsmonitor\x00"]\n\tx\n'),
    ("tricky-nul-in-subsection-dotted-key",
     b'[remote "origin.url\x00"]\n\tx = ext::sh -c touch% /tmp/pwned\n'),
    ("tricky-nul-in-subsection-include-path",
     b'[include "path\x00"]\n\tx = /tmp/evil.cfg\n'),
    ("tricky-nul-in-subsection-key-on-header-line",
     b'[core "fsmonitor\x00"]x=echo pwned\n'),
    ("tricky-nul-in-subsection-via-backslash-escape",
     b'[core "fsmonitor\\\x00"]\n\tx = echo pwned\n'),
    ("tricky-nul-in-subsection-uppercase-kept",
     b'[Core "FSMonitor\x00"]\n\tx = echo pwned\n'),
    ("tricky-nul-in-subsection-includeif-loses-path",
     b'[includeIf "gitdir:/\x00"]\n\tpath = /tmp/evil.cfg\n'),
    ("tricky-key-on-header-line",
     b"[core] fsmonitor = echo pwned\n"),
    ("tricky-key-on-header-line-nospace",
     b"[core]fsmonitor=echo pwned\n"),
    ("tricky-bool-key-on-header-line",
     b"[core]   bare\n"),
    ("tricky-key-on-subsection-header-line",
     b'[remote "origin"] url = ext::sh -c touch% /tmp/pwned\n'),
    ("tricky-two-headers-one-line",
     b"[user] [core] fsmonitor = x\n"),
    ("tricky-adjacent-headers",
     b"[user][core]fsmonitor=x\n"),
    ("tricky-header-then-key-no-newline-eof",
     b"[core]fsmonitor"),
    ("tricky-lone-cr-after-header",
     b"[core]\rfsmonitor = x\n"),
    ("tricky-lone-cr-only-file",
     b"\r[core]\rfsmonitor=x\r"),
    ("tricky-lone-cr-in-header-before-subsection",
     b'[remote\r"origin"]\rurl = ext::x\n'),
    ("tricky-comment-ending-in-backslash",
     b"[core]\n# a comment \\\nfsmonitor = x\n"),
    ("tricky-semicolon-comment-ending-in-backslash",
     b"[core]\n; a comment \\\nfsmonitor = x\n"),
    ("tricky-inline-comment-ending-in-backslash",
     b"[core]\n\tbare = false ; \\\n\tfsmonitor = x\n"),
    ("tricky-inline-hash-comment-ending-in-backslash",
     b"[core]\n\tbare = false #\\\n\tfsmonitor = x\n"),
    ("tricky-value-ends-with-escaped-backslash",
     b"[core]\n\teditor = vi\\\\\n\tfsmonitor = x\n"),
    ("tricky-quoted-value-ends-with-escaped-backslash",
     b'[core]\n\teditor = "vi\\\\"\n\tfsmonitor = x\n'),
    ("tricky-continuation-inside-quotes-then-key",
     b'[core]\n\teditor = "vi \\\n-x"\n\tfsmonitor = x\n'),
    ("tricky-header-on-line-after-comment-with-backslash",
     b"[user]\n\tname = a # \\\n[core]fsmonitor=x\n"),
    ("tricky-key-without-equals",
     b"[core]\n\tfsmonitor\n"),
    ("tricky-key-without-equals-trailing-space-eof",
     b"[core]\n\tfsmonitor \t"),
    ("tricky-empty-value",
     b"[core]\n\tfsmonitor =\n"),
    ("tricky-value-is-only-comment",
     b"[core]\n\tfsmonitor = ; nothing\n"),
    ("tricky-tab-around-equals",
     b"[core]\n\tfsmonitor\t=\tx\n"),
    ("tricky-uppercase-section-and-key",
     b"[CORE]\n\tFSMONITOR = x\n"),
    ("tricky-mixedcase-legacy-subsection",
     b"[Remote.Origin]\n\tURL = ext::sh -c x\n"),
    ("tricky-legacy-subsection-include",
     b"[includeIf.x]\n\tpath = /x\n[Include]\n\tPath = /tmp/x\n"),
    ("tricky-utf8-bom",
     BOM + b"[core]\n\tfsmonitor = x\n"),
    ("tricky-bom-then-key-on-header-line",
     BOM + b"[core]fsmonitor=x"),
    ("tricky-nul-in-value-then-more-lines",
     b"[user]\n\tname = a\x00b\n[core]\n\tfsmonitor = x\n"),
    ("tricky-subsection-backslash-escape-any-char",
     b'[url "e\\xt::"]\n\tinsteadOf = https://\n'),
    ("tricky-subsection-escaped-quote",
     b'[url "ext::\\"x"] insteadOf = https://\n'),
    ("tricky-subsection-with-close-bracket",
     b'[remote "x]"] url = ext::sh -c x\n'),
    ("tricky-subsection-with-hash-and-semicolon",
     b'[remote "a#b;c"]\n\turl = ext::sh -c x\n'),
    ("tricky-dotted-section-plus-subsection",
     b'[remote.evil "x"]\n\turl = ext::sh -c x\n'),
    ("tricky-leading-whitespace-before-header",
     b" \t [core]\n\tfsmonitor = x\n"),
    ("tricky-crlf-header-and-key",
     b"[core]\r\n\tfsmonitor = x\r\n"),
    ("tricky-long-value-then-key",
     b"[user]\n\tname = " + b"A" * 70000 + b"\n[core]\n\tfsmonitor = x\n"),
    ("tricky-value-containing-header-text-then-real-header",
     b'[user] name = "x\\n[core]" [core] fsmonitor = y\n[core]fsmonitor=z\n'),
    ("tricky-include-on-header-line",
     b"[include]path=/tmp/evil\n"),
    ("tricky-includeif-on-header-line",
     b'[includeIf "gitdir:/"]path=/tmp/evil\n'),
    ("tricky-escaped-backslash-before-quote-at-eol",
     b'[core]\n\teditor = "a\\\\" "b"\n\tfsmonitor = x\n'),
    ("tricky-blank-lines-with-cr-and-spaces",
     b"\r\n \t\r\n[core]\r\n\r\n\t\r\n\tfsmonitor = x\r\n"),
]

SECTIONS = [
    ("header-simple", b"[core]\n\tbare = true\n"),
    ("header-subsection", b'[section "sub"]\n\tkey = v\n'),
    ("header-subsection-mixed-case", b'[SeCtIoN "SuB"]\n\tKeY = V\n'),
    ("header-legacy-subsection", b"[filter.lfs]\n\tclean = git-lfs clean -- %f\n"),
    ("header-legacy-subsection-upper", b"[Filter.LFS]\n\tSmudge = x\n"),
    ("header-legacy-two-dots", b"[section.sub.sub2]\n\tkey = v\n"),
    ("header-legacy-mixed", b"[SeCtion.SuB.sUb2]\n\tkEy = v\n"),
    ("header-subsection-escaped-quote-and-backslash", b'[a "b\\"c\\\\d"]\n\tk = v\n'),
    ("header-subsection-backslash-n-is-n", b'[a "b\\nc"]\n\tk = v\n'),
    ("header-subsection-backslash-t-is-t", b'[a "b\\tc"]\n\tk = v\n'),
    ("header-empty-subsection", b'[a ""]\n\tk = v\n'),
    ("header-subsection-with-spaces", b'[a "b c  d "]\n\tk = v\n'),
    ("header-subsection-tab-separator", b'[a\t"b"]\n\tk = v\n'),
    ("header-subsection-many-spaces-separator", b'[a  \t  "b"]\n\tk = v\n'),
    ("header-subsection-dots", b'[remote "a.b.c"]\n\turl = x\n'),
    ("header-subsection-unicode", "[a \"ключ ☃\"]\n\tk = v\n".encode()),
    ("header-subsection-non-utf8", b'[a "\xff\xfe\x80"]\n\tk = v\n'),
    ("header-subsection-lone-cr", b'[a "b\rc"]\n\tk = v\n'),
    ("header-subsection-tab-inside", b'[a "b\tc"]\n\tk = v\n'),
    ("header-subsection-semicolon-hash", b'[a "#;"]\n\tk = v\n'),
    ("header-subsection-nul-at-start", b'[a "\x00b"]\n\tk = v\n'),
    ("header-subsection-ends-with-escaped-backslash", b'[a "b\\\\"]\n\tk = v\n'),
    ("header-subsection-trailing-backslash-invalid", b'[a "b\\"]\n\tk = v\n'),
    ("header-nul-invalid", b"[\x00core]\n\tk = v\n"),
    ("header-subsection-newline-invalid", b'[a "b\nc"]\n\tk = v\n'),
    ("header-subsection-escaped-newline-invalid", b'[a "b\\\nc"]\n\tk = v\n'),
    ("header-subsection-unterminated", b'[a "b]\n\tk = v\n'),
    ("header-subsection-unterminated-eof", b'[a "b'),
    ("header-subsection-trailing-word-invalid", b'[a "b" c]\n\tk = v\n'),
    ("header-subsection-space-before-bracket-invalid", b'[a "b" ]\n\tk = v\n'),
    ("header-subsection-no-close-bracket-invalid", b'[a "b"\n\tk = v\n'),
    ("header-subsection-unquoted-invalid", b"[a b]\n\tk = v\n"),
    ("header-two-subsections-invalid", b'[a "b" "c"]\n\tk = v\n'),
    ("header-unclosed-invalid", b"[a\n\tk = v\n"),
    ("header-unclosed-eof-invalid", b"[a"),
    ("header-empty-invalid", b"[]\n\tk = v\n"),
    ("header-trailing-dot", b"[a.]\n\tk = v\n"),
    ("header-leading-dot", b"[.a]\n\tk = v\n"),
    ("header-only-dot", b"[.]\n\tk = v\n"),
    ("header-double-dot", b"[a..b]\n\tk = v\n"),
    ("header-starts-with-digit", b"[1a]\n\tk = v\n"),
    ("header-all-digits", b"[123456]\n\ta123 = 987\n"),
    ("header-underscore-invalid", b"[a_b]\n\tk = v\n"),
    ("header-dash", b"[a-b]\n\tk = v\n"),
    ("header-only-dash", b"[-]\n\tk = v\n"),
    ("header-leading-space-inside-invalid", b"[ a]\n\tk = v\n"),
    ("header-trailing-space-inside-invalid", b"[a ]\n\tk = v\n"),
    ("header-colon-invalid", b"[a:b]\n\tk = v\n"),
    ("header-unicode-invalid", "[ключ]\n\tk = v\n".encode()),
    ("header-legacy-unicode-subsection-invalid", "[a.ключ]\n\tk = v\n".encode()),
    ("header-formfeed-separator-invalid", b'[a\x0c"b"]\n\tk = v\n'),
    ("header-vtab-separator-invalid", b'[a\x0b"b"]\n\tk = v\n'),
    ("header-newline-separator-invalid", b'[a\n"b"]\n\tk = v\n'),
    ("header-crlf-separator-invalid", b'[a\r\n"b"]\n\tk = v\n'),
    ("header-dotted-plus-subsection-mixed-case", b'[Remote.Evil "X"]\n\turl = v\n'),
    ("header-nested-brackets-invalid", b"[[a]]\n\tk = v\n"),
    ("header-comment-after", b"[a] # comment\n\tk = v\n[b] ; comment\n\tk = w\n"),
    ("header-comment-directly-after", b"[a]#c\n\tk = v\n"),
    ("header-equals-after-invalid", b"[a]=x\n"),
    ("header-quote-after-invalid", b'[a]"k"=x\n'),
    ("header-subsection-legacy-then-quote-spacing", b'[a.b\t"c"]\n\tk = v\n'),
    ("header-long-section-name", b"[" + b"s" * 5000 + b"]\n\tk = v\n"),
    ("header-long-subsection", b'[a "' + b"S" * 10000 + b'"]\n\tk = v\n'),
    ("header-same-section-repeated", b"[a]\n\tk = 1\n[b]\n\tk = 2\n[A]\n\tk = 3\n[a]\n\tk = 4\n"),
    ("header-subsection-case-distinct", b'[my "Foo bAr"]\n\thi = 1\n[my "FOO BAR"]\n\thi = 2\n[my "foo bar"]\n\thi = 3\n[my.Foo]\n\thi = 4\n'),
    ("header-empty-sections", b"[a]\n[b]\n[c]\n"),
]

KEYS = [
    ("key-before-any-section", b"k = v\n[a]\n\tb = 1\n"),
    ("key-before-any-section-bool", b"fsmonitor\n"),
    ("key-with-dash-and-digits", b"[a]\n\tFoo-Bar9 = 1\n\tx-1-y = 2\n"),
    ("key-starting-with-digit-invalid", b"[a]\n\t1key = v\n"),
    ("key-starting-with-dash-invalid", b"[a]\n\t-key = v\n"),
    ("key-with-underscore-invalid", b"[a]\n\tkey_name = v\n"),
    ("key-with-dot-invalid", b"[a]\n\tb.c = v\n"),
    ("key-with-colon-invalid", b"[a]\n\tb:c = v\n"),
    ("key-unicode-invalid", "[a]\n\tключ = v\n".encode()),
    ("key-unicode-suffix-invalid", "[a]\n\tkeyé = v\n".encode()),
    ("key-very-long", b"[a]\n\t" + b"k" * 5000 + b" = v\n"),
    ("key-single-letter", b"[a]\n\tb = v\n"),
    ("key-space-inside-invalid", b"[a]\n\tke y = v\n"),
    ("key-trailing-garbage-invalid", b"[section]\n\tkey garbage\n"),
    ("key-nul-inside-invalid", b"[a]\n\tke\x00y = v\n"),
    ("key-nul-after-invalid", b"[a]\n\tkey\x00 = v\n"),
    ("key-lone-cr-before-equals-invalid", b"[a]\n\tkey\r= v\n"),
    ("key-lone-cr-after-bool-invalid", b"[a]\n\tkey\rother = v\n"),
    ("key-bool-then-comment-invalid", b"[a]\n\tkey # comment\n"),
    ("key-bool-then-semicolon-invalid", b"[a]\n\tkey;\n"),
    ("key-bool-lone-cr-eof-invalid", b"[core]\n\tfsmonitor\r"),
    ("key-comment-lines", b"[a]\n#k=v\n  ;k=v\n\t# [core] fsmonitor = x\n"),
    ("key-bool-crlf", b"[a]\r\n\tkey\r\n"),
    ("key-bool-eof", b"[a]\n\tkey"),
    ("key-equals-no-key-invalid", b"[a]\n\t= value\n"),
    ("key-equals-no-key-top-invalid", b"=value\n"),
    ("key-multiple-values", b"[a]\n\tk = 1\n\tk = 2\n\tK = 3\n"),
    ("key-bool-empty-value-mix", b"[foo]\n\tbaz\n\tbaz =\n\tbaz = fool\n"),
    ("key-formfeed-before-invalid", b"[a]\n\x0ck = v\n"),
    ("key-vtab-before-invalid", b"[a]\n\x0bk = v\n"),
    ("key-formfeed-before-equals-invalid", b"[a]\n\tk\x0c= v\n"),
    ("key-double-equals", b"[a]\n\tk == v\n"),
    ("key-space-before-equals", b"[a]\n\tk      =v\n"),
    ("key-include-path", b"[include]\n\tpath = /tmp/inc\n"),
    ("key-include-path-tilde", b"[include]\n\tpath = ~/inc\n\tpath = relative/inc\n"),
    ("key-includeif-gitdir", b'[includeIf "gitdir:x"]\n\tpath = /tmp/inc\n'),
    ("key-includeif-onbranch", b'[includeIf "onbranch:main"]\n\tpath = inc\n'),
    ("key-includeif-hasconfig", b'[includeIf "hasconfig:remote.*.url:https://**"]\n\tpath = inc\n'),
    ("key-includeif-case", b'[INCLUDEIF "GitDir/i:X"]\n\tPATH = inc\n'),
    ("key-protocol-allow", b"[protocol]\n\tallow = always\n[protocol \"ext\"]\n\tallow = always\n"),
    ("key-remote-ext-url", b'[remote "o"]\n\turl = ext::sh -c x\n'),
    ("key-url-insteadof-ext", b'[url "ext::"]\n\tinsteadOf = https://\n'),
    ("key-url-insteadof-same-line", b'[url "ext::sh -c touch% /tmp/x #"] insteadOf = https://\n'),
    ("key-filter-driver", b'[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = x\n\tprocess = y\n\trequired\n'),
]

VALUES = [
    ("value-plain", b"[a]\n\tk = hello world\n"),
    ("value-quoted", b'[a]\n\tk = "hello world"\n'),
    ("value-partly-quoted", b'[a]\n\tk = hel"lo wo"rld\n'),
    ("value-many-quote-segments", b'[a]\n\tk = "a"b"c" d "e"\n'),
    ("value-empty-quotes", b'[a]\n\tk = ""\n'),
    ("value-quoted-leading-trailing-space", b'[a]\n\tk = "  x  "\n'),
    ("value-unquoted-leading-trailing-space", b"[a]\n\tk =   x   \n"),
    ("value-trailing-tabs", b"[a]\n\tk = x\t\t\n"),
    ("value-internal-tabs", b"[a]\n\tk = big \t\t blue\n"),
    ("value-internal-spaces", b"[a]\n\tk = a    b\n"),
    ("value-trailing-space-kept-by-empty-quotes", b'[a]\n\tk = x ""\n'),
    ("value-trailing-space-after-quote", b'[a]\n\tk = "x "  \n'),
    ("value-quoted-then-unquoted-tail", b'[a]\n\tk = "big \t\t blue \t \t"\t \n'),
    ("value-escape-n", b"[a]\n\tk = a\\nb\n"),
    ("value-escape-t", b"[a]\n\tk = a\\tb\n"),
    ("value-escape-b", b"[a]\n\tk = a\\bb\n"),
    ("value-escape-quote", b'[a]\n\tk = a\\"b\n'),
    ("value-escape-backslash", b"[a]\n\tk = a\\\\b\n"),
    ("value-escapes-in-quotes", b'[a]\n\tk = "\\n\\t\\b\\"\\\\"\n'),
    ("value-escape-n-only", b"[a]\n\tk = \\n\\n\n"),
    ("value-invalid-escape-x", b"[a]\n\tk = a\\xb\n"),
    ("value-invalid-escape-r", b"[a]\n\tk = a\\rb\n"),
    ("value-invalid-escape-a", b"[a]\n\tk = a\\ab\n"),
    ("value-invalid-escape-space", b"[a]\n\tk = a\\ \n"),
    ("value-invalid-escape-semicolon", b"[a]\n\tk = a\\;b\n"),
    ("value-invalid-escape-hash", b"[a]\n\tk = a\\#b\n"),
    ("value-invalid-escape-0", b"[a]\n\tk = a\\0b\n"),
    ("value-invalid-escape-in-quotes", b'[a]\n\tk = "a\\xb"\n'),
    ("value-invalid-escape-nul", b"[a]\n\tk = a\\\x00b\n"),
    ("value-backslash-eof", b"[a]\n\tk = x\\"),
    ("value-continuation", b"[a]\n\tk = cont\\\ninued\n"),
    ("value-continuation-keeps-leading-ws", b"[a]\n\tk = a\\\n   b\n"),
    ("value-continuation-in-quotes", b'[a]\n\tk = "cont;\\\ninued"\n'),
    ("value-continuation-crlf", b"[a]\r\n\tk = cont\\\r\ninued\r\n"),
    ("value-continuation-lone-cr-invalid", b"[a]\n\tk = cont\\\rinued\n"),
    ("value-continuation-then-comment", b"[a]\n\tk = x\\\n; not a comment? \n"),
    ("value-continuation-multiple", b"[a]\n\tk = a\\\nb\\\nc\\\n\n\tm = d\n"),
    ("value-trailing-space-before-continuation", b"[a]\n\tk = a \\\n b\n"),
    ("value-backslash-space-newline-invalid", b"[a]\n\tk = a\\ \nb\n"),
    ("value-comment-hash", b"[a]\n\tk = x # c\n"),
    ("value-comment-semicolon", b"[a]\n\tk = x ; c\n"),
    ("value-comment-no-space", b"[a]\n\tk = x#c\n"),
    ("value-hash-in-quotes", b'[a]\n\tk = "x # y"\n'),
    ("value-semicolon-in-quotes", b'[a]\n\tk = "test;test"\n'),
    ("value-comment-after-quotes", b'[a]\n\tk = "big blue"\t# to be discarded\n'),
    ("value-comment-unbalanced-quote-in-comment", b'[a]\n\tk = x # "\n'),
    ("value-unterminated-quote-invalid", b'[a]\n\tk = "x\n'),
    ("value-unterminated-quote-eof-invalid", b'[a]\n\tk = "x'),
    ("value-quote-spans-line-invalid", b'[a]\n\tk = "x\ny"\n'),
    ("value-escaped-quote-unterminated-invalid", b'[a]\n\tk = "a\\"\n'),
    ("value-quoted-backslash-eof-invalid", b'[a]\n\tk = "x\\'),
    ("value-empty", b"[a]\n\tk =\n"),
    ("value-empty-spaces", b"[a]\n\tk =   \t\n"),
    ("value-empty-with-comment", b"[a]\n\tk = # c\n"),
    ("value-empty-eof", b"[a]\n\tk ="),
    ("value-equals-in-value", b"[a]\n\tk = foo=bar\n"),
    ("value-no-space-around-equals", b"[a]\n\tk=v\n"),
    ("value-lone-cr-middle", b"[a]\n\tk = b\rc = d\n"),
    ("value-lone-cr-trailing", b"[a]\n\tk = b\r\n\tm = c\r"),
    ("value-cr-cr-lf", b"[a]\n\tk = b\r\r\n"),
    ("value-quoted-cr", b'[a]\n\tk = "b\r"\n'),
    ("value-formfeed-vtab-kept", b"[a]\n\tk = \x0cx\x0by\x0c\n"),
    ("value-nul-truncates", b"[a]\n\tk = abc\x00def\n"),
    ("value-nul-at-start", b"[a]\n\tk = \x00def\n"),
    ("value-nul-in-quotes", b'[a]\n\tk = "a\x00b"\n'),
    ("value-non-utf8", b"[a]\n\tk = \xff\xfe\xc3\x28\n"),
    ("value-latin1", b"[a]\n\tk = caf\xe9\n"),
    ("value-unicode", "[a]\n\tk = héllo ☃ 🎉\n".encode()),
    ("value-bom-inside", b"[a]\n\tk = " + BOM + b"x\n"),
    ("value-brackets", b'[branch "zwei"] a = 1 [branch "vier"]\n'),
    ("value-header-like", b"[a]b=1[c]d=2\n"),
    ("value-very-long", b"[a]\n\tk = " + b"x" * 200000 + b"\n"),
    ("value-long-special", b"[section]\n\tkey = x" + b"0" * 1020 + b"7x a\n"),
    ("value-control-chars", b"[a]\n\tk = \x01\x02\x1b[31m\x7f\n"),
    ("value-escaped-newline-via-n-and-quote", b'[a]\n\tk = "line1\\nline2"\n'),
    ("value-quote-inside-unquoted", b'[a]\n\tk = say "hi" there\n'),
    ("value-equals-only", b"[a]\n\tk = =\n"),
]

WHOLE_FILE = [
    ("file-empty", b""),
    ("file-only-newlines", b"\n\n\n"),
    ("file-only-comments", b"# c\n; d\n\t# e\n"),
    ("file-only-bom", BOM),
    ("file-bom-then-comment", BOM + b"# c\n[a]\n\tk = v\n"),
    ("file-partial-bom-invalid", b"\xef\xbb[a]\n\tk = v\n"),
    ("file-double-bom-invalid", BOM + BOM + b"[a]\n\tk = v\n"),
    ("file-bom-after-newline-invalid", b"\n" + BOM + b"[a]\n\tk = v\n"),
    ("file-bom-before-key-invalid", b"[a]\n" + BOM + b"k = v\n"),
    ("file-utf16le-bom-invalid", b"\xff\xfe[\x00a\x00]\x00\n\x00"),
    ("file-crlf", b"[core]\r\n\tbare = true\r\n\tx = \"q\"\r\n"),
    ("file-lone-cr-line-endings", b"[core]\rbare = true\rfsmonitor = x\r"),
    ("file-mixed-line-endings", b"[a]\r\n\tk = 1\n\tm = 2\r\n[b]\n\tn\r\n"),
    ("file-no-trailing-newline", b"[section]\n  key = foo"),
    ("file-no-trailing-newline-header", b"[a]\n\tk = v\n[b]"),
    ("file-whitespace-before-header", b"   [a]\n\t\tk = v\n"),
    ("file-formfeed-line-invalid", b"[a]\n\tk = v\n\x0c\n[b]\n\tm = w\n"),
    ("file-nul-at-top-level-invalid", b"[a]\n\x00\n\tk = v\n"),
    ("file-non-utf8-comment", b"# \xff\xfe comment\n[a]\n\tk = v\n"),
    ("file-non-utf8-top-level-invalid", b"[a]\n\xff = v\n"),
    ("file-multiple-sections-repeating", b"[a]\n\tx = 1\n[b \"s\"]\n\tx = 2\n[a]\n\tx = 3\n[b \"s\"]\n\tx = 4\n"),
    ("file-t1300-whitespace",
     b"[section]\n"
     b"\tsolid = rock\n"
     b"\tsparse = big \t\t blue\n"
     b"\tsparseAndTail = big \t\t blue \n"
     b"\tsparseAndTailQuoted = \"big \t\t blue \"\n"
     b"\tsparseAndBiggerTail = big \t\t blue \t \t\n"
     b"\tsparseAndBiggerTailQuoted = \"big \t\t blue \t \t\"\n"
     b"\tsparseAndBiggerTailQuotedPlus = \"big \t\t blue \t \t\"\t \n"
     b"\theadAndTail = \tbig blue \n"
     b"\theadAndTailQuoted = \"\tbig blue \"\n"
     b"\theadAndTailQuotedPlus = \"\tbig blue \" \n"
     b"\tannotated = big blue\t# to be discarded\n"
     b"\tannotatedQuoted = \"big blue\"\t# to be discarded\n"),
    ("file-t1300-silly-comments",
     b"[beta] ; silly comment # another comment\n"
     b"noIndent= sillyValue ; 'nother silly comment\n\n"
     b"# empty line\n\t\t; comment\n"
     b"\t\thaha   =\"beta\" # last silly comment\n"
     b"haha = hello\n\thaha = bello\n"
     b"[nextSection] noNewline = ouch\n"),
    ("file-t1300-continued",
     b"[section]\n\t; comment \\\n\tcontinued = cont\\\ninued\n"
     b"\tnoncont   = not continued ; \\\n\tquotecont = \"cont;\\\ninued\"\n"),
    ("file-t1300-null-list",
     b"[section \"sub=section\"]\n\tval1 = foo=bar\n\tval2 = foo\\nbar\n"
     b"\tval3 = \\n\\n\n\tval4 =\n\tval5\n"),
    ("file-t1300-rename-section-input",
     b"# Hallo\n\t#Bello\n[branch \"eins\"]\n\tx = 1\n[branch.eins]\n\ty = 1\n"
     b"\t[branch \"1 234 blabl/a\"]\nweird\n"),
    ("file-t1300-hierarchical",
     b"[123456]\n\ta123 = 987\n[Version \"1.2.3eX\"]\n\tAlpha = beta\n"),
    ("file-t1308-default",
     b"[case]\n\tpenguin = very blue\n\tMovie = BadPhysics\n\tUPPERCASE = true\n"
     b"\tMixedCase = true\n\tmy =\n\tfoo\n\tbaz = sam\n[Cores]\n\tWhatEver = Second\n"
     b"\tbaz = bar\n[cores]\n\tbaz = bat\n[CORES]\n\tbaz = ball\n"
     b"[my \"Foo bAr\"]\n\thi = mixed-case\n[my \"FOO BAR\"]\n\thi = upper-case\n"
     b"[my \"foo bar\"]\n\thi = lower-case\n[case]\n\tbaz = bat\n\tbaz = hask\n"
     b"[lamb]\n\tchop = 65\n\thead = none\n[goat]\n\tlegs = 4\n\thead = true\n"
     b"\tskin = false\n\tnose = 1\n\thorns\n[value]\n\tless\n"),
    ("file-t1300-bad-syntax", b"# broken key=value\n[section]\nkey garbage\n"),
    ("file-t1300-incomplete-header", b"# broken section line\n[section\nkey = value\n"),
    ("file-t1300-incomplete-string", b"# broken value string\n[section]\nkey = \"value string\n"),
    ("file-error-after-good-entries", b"[a]\n\tk = 1\n\tm = 2\n\tbad_key = 3\n\tn = 4\n"),
    ("file-t1305-include-chain",
     b"[include]\n\tpath = one\n[includeIf \"gitdir:foo/\"]\n\tpath = two\n"
     b"[includeIf \"gitdir/i:FOO/\"]\n\tpath = three\n[include]\n\tpath\n"),
    ("file-many-headers-one-line", b"[a] [b] [c \"d\"] [e]k=v\n"),
    ("file-realistic-repo-config",
     b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
     b"\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://example.com/r.git\n"
     b"\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n"
     b"\tremote = origin\n\tmerge = refs/heads/main\n"),
]

INPUTS = TRICKY + SECTIONS + KEYS + VALUES + WHOLE_FILE


def parse_null_list(out: bytes):
    """git config --null --list: 'key\\nvalue\\0' or 'key\\0' (value NULL)."""
    entries = []
    if not out:
        return entries
    if not out.endswith(b"\x00"):
        raise ValueError("output not NUL-terminated: %r" % out[-50:])
    for rec in out[:-1].split(b"\x00"):
        if b"\n" in rec:
            k, v = rec.split(b"\n", 1)
        else:
            k, v = rec, None
        entries.append((k, v))
    return entries


def run_git(git, data: bytes, cwd: str, env: dict):
    p = subprocess.run([git, "config", "--file=-", "--null", "--list", "--no-includes"],
                       input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--git", default="/usr/local/bin/git")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "gitconfig_vectors.json"))
    ap.add_argument("--full", action="store_true",
                    help="every vector, with UTF-8 entries beside the base64 ones")
    args = ap.parse_args()

    names = [n for n, _ in INPUTS]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, dup

    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "HOME": "/nonexistent",
        "LC_ALL": "C",
    }
    version = subprocess.run([args.git, "--version"], stdout=subprocess.PIPE,
                             env=env, check=True).stdout.decode().strip()
    vectors = []
    with tempfile.TemporaryDirectory(prefix="gitcfgvec.") as cwd:
        # cwd must not be inside a repository
        r = subprocess.run([args.git, "rev-parse", "--git-dir"], cwd=cwd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert r.returncode != 0, "temp dir is inside a git repository"
        # sanity: --file=- really reads stdin, and --no-includes is honoured
        rc, out, _ = run_git(args.git, b"[include]path=/etc/passwd\n[s]k=v\n", cwd, env)
        assert rc == 0 and out == b"include.path\n/etc/passwd\x00s.k\nv\x00", out

        for name, data in INPUTS:
            rc, out, err = run_git(args.git, data, cwd, env)
            ok = rc == 0
            ents = parse_null_list(out) if ok else []
            v = {
                "name": name,
                "input_b64": base64.b64encode(data).decode(),
                "git_ok": ok,
                "entries": [[k.decode("utf-8", "replace"),
                             None if val is None else val.decode("utf-8", "replace")]
                            for k, val in ents],
                "entries_b64": [[base64.b64encode(k).decode(),
                                 None if val is None else base64.b64encode(val).decode()]
                                for k, val in ents],
            }
            lossy = False
            for k, val in ents:
                for b in (k, val):
                    if b is not None:
                        try:
                            b.decode("utf-8")
                        except UnicodeDecodeError:
                            lossy = True
            if lossy:
                v["entries_lossy"] = True
            vectors.append(v)

    with open(args.out, "w") as f:
        if args.full:
            json.dump(vectors, f, indent=1, ensure_ascii=False)
        else:
            compact = [{"name": v["name"], "input": v["input_b64"], "ok": v["git_ok"],
                        "entries": v["entries_b64"]}
                       for v in vectors if len(base64.b64decode(v["input_b64"])) <= 4096]
            json.dump(compact, f, separators=(",", ":"))
        f.write("\n")
    print("%s: %d vectors (%d git_ok, %d rejected), tricky=%d, from %s (%s)" % (
        args.out, len(vectors), sum(v["git_ok"] for v in vectors),
        sum(not v["git_ok"] for v in vectors),
        sum(v["name"].startswith("tricky-") for v in vectors), args.git, version),
        file=sys.stderr)


if __name__ == "__main__":
    main()
