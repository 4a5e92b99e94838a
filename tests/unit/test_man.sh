#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The man pages docs/tacos-synth.1 and docs/tacos-probe.1 cannot drift from
# the programs: for each, the options its --help lists, the options the
# page's OPTIONS section describes (the tags of its .TP paragraphs) and the
# options the program's getopt_long table and string accept are one set
# (a difference is shown).  Where groff or nroff is installed, each page
# renders without warnings (groff -ww); without one that part is skipped.
# `make install-man` puts both pages under man1.
S=${TACOS_SRC:-../..}
B=${TACOS_BUILD:-../..}
T=${TACOS_TMP:-./tmp}/man
rm -rf "$T" && mkdir -p "$T"
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# options at the start of lines indented 2 to 6 spaces ("  -t, --topology
# SPEC", "      --bw LIST"; descriptions continue further in)
help_opts() {
    awk '{
        match($0, /^ */)
        ind = RLENGTH
        rest = substr($0, ind + 1)
        if (ind < 2 || ind > 6 || rest !~ /^-/)
            next
        while (match(rest, /^--?[A-Za-z0-9][-A-Za-z0-9]*/)) {
            print substr(rest, 1, RLENGTH)
            rest = substr(rest, RLENGTH + 1)
            if (substr(rest, 1, 2) != ", ")
                break
            rest = substr(rest, 3)
        }
    }' | sort -u
}

# the tag lines of the .TP paragraphs of the page's OPTIONS section, as
# they render (.BR/.BI/...: arguments joined; .B/.I: with spaces), then
# their options as in help_opts
page_opts() {
    awk '
        /^\.SH/ { opts = ($2 == "OPTIONS"); next }
        !opts { next }
        /^\.TP/ { tag = 1; next }
        !tag { next }
        {
            tag = 0
            macro = $1
            line = substr($0, length(macro) + 1)
            gsub(/\\f[BIRP]/, "", line)
            gsub(/\\-/, "-", line)
            out = ""; q = 0; sep = (macro == ".B" || macro == ".I") ? " " : ""
            for (i = 1; i <= length(line); i++) {
                c = substr(line, i, 1)
                if (c == "\"") q = !q
                else if (c == " " && !q) { if (out != "" && substr(out, length(out)) != sep) out = out sep }
                else out = out c
            }
            print "  " out
        }' "$1" | help_opts
}

# the long options of the getopt_long table and the letters of its string
code_opts() {
    grep -o '{"[a-z0-9-]*", *[a-z_]*_argument' "$1" | sed 's/{"\([a-z0-9-]*\)".*/--\1/'
    sed -n 's/.*getopt_long([^"]*"\([^"]*\)".*/\1/p' "$1" | tr -d ':' | fold -w1 | sed 's/^/-/'
}

same() { # what1 file1 what2 file2: 0 where both list the same options
    cmp -s "$2" "$4" && return 0
    fail "$1 and $3 list different options:"
    diff "$2" "$4" | while read -r side opt; do
        case $side in
        "<") echo "  only in $1: $opt" ;;
        ">") echo "  only in $3: $opt" ;;
        esac
    done >&2
    return 1
}

fmt=
if command -v groff >/dev/null; then
    fmt="groff -man -Tutf8 -ww"
elif command -v nroff >/dev/null; then
    fmt="nroff -man -ww"
else
    echo "no groff or nroff: the pages' rendering is not checked"
fi

for prog in synth/tacos-synth:synth/tacos_synth_cli.c topo_probe/tacos-probe:topo_probe/tacos_probe_cli.c; do
    bin=$B/${prog%%:*}
    src=$S/${prog#*:}
    name=${bin##*/}
    page=$S/docs/$name.1
    [ -x "$bin" ] || { fail "$bin not built"; continue; }
    [ -f "$page" ] || { fail "no $page"; continue; }
    "$bin" --help >"$T/$name.help" 2>&1 || fail "$name --help: exit $?"
    help_opts <"$T/$name.help" >"$T/$name.fromhelp"
    page_opts "$page" >"$T/$name.frompage"
    code_opts "$src" | sort -u >"$T/$name.fromcode"
    [ -s "$T/$name.fromhelp" ] || fail "$name --help: no options found"
    same "$name --help" "$T/$name.fromhelp" "docs/$name.1" "$T/$name.frompage" &&
        same "$name --help" "$T/$name.fromhelp" "${prog#*:}" "$T/$name.fromcode" &&
        echo "$name: the same $(wc -l <"$T/$name.fromhelp") options in --help, the page and the code"
    if [ -n "$fmt" ]; then
        LC_ALL=C.UTF-8 $fmt "$page" >"$T/$name.txt" 2>"$T/$name.warn" ||
            fail "docs/$name.1 does not render: $(cat "$T/$name.warn")"
        [ -s "$T/$name.warn" ] && { fail "docs/$name.1 renders with warnings:"; cat "$T/$name.warn" >&2; }
        [ "$(wc -l <"$T/$name.txt")" -gt 40 ] || fail "docs/$name.1 renders as $(wc -l <"$T/$name.txt") lines"
    fi
done

# make install puts them under man1 (only the pages: install-man)
if make -s -C "$B" install-man DESTDIR="$(cd "$T" && pwd)/inst" >"$T/install.log" 2>&1; then
    for name in tacos-synth tacos-probe; do
        [ -n "$(find "$T/inst" -path "*/man1/$name.1")" ] || fail "make install-man: no man1/$name.1"
    done
else
    fail "make install-man failed: $(tail -5 "$T/install.log")"
fi
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
