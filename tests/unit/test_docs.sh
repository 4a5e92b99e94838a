#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every reason the sources give for a call that falls back (or runs on host
# copies of GPU buffers) appears in docs/troubleshooting.md, word for word.
# No build and no MPI: it reads the C sources of core/, coll_tacos/ and
# pmpi/ and extracts the reasons with a small C tokenizer (awk):
#   - string literals assigned to a variable whose name contains "why"
#     (`*why = "..."`, `why_dev = c ? "a" : "b"`, adjacent literals joined);
#   - literals returned by functions that return `const char *` (the reason
#     functions: tacos_view_*, tacos_mem_why, pmpi_left_to_mpich, ...);
#   - `#define NAME "literal"` (PASSED);
#   - literal reasons passed to FALLBACK, tacos_mem_why, coll_tacos_unserved,
#     pmpi_unserved and the host copies' by_hand_* (their third argument on);
#   - formats written into a reason buffer (`snprintf(c->why, ..., "below %s")`):
#     the doc must hold a line matching the format, each conversion standing
#     for a parameter name (`below coll_tacos_min_bytes`).
# Each must appear in the doc as code, between backticks (`one rank`), so a
# reason is not found inside a longer one.  It fails naming each reason the
# doc lacks, with the file and line.
# The tree root: $srcdir/../.. under make check (VPATH builds too), else two
# directories above this script's (tests/unit).
top=${srcdir:+$srcdir/../..}
top=${top:-$(dirname "$0")/../..}
doc=$top/docs/troubleshooting.md
if [ ! -r "$doc" ]; then
    echo "FAIL: $doc is missing" >&2
    exit 1
fi
set -- "$top"/core/*.c "$top"/core/*.h "$top"/coll_tacos/*.c "$top"/coll_tacos/*.h \
    "$top"/pmpi/*.c "$top"/pmpi/*.h
for f in "$@"; do
    if [ ! -r "$f" ]; then
        echo "FAIL: no sources at $top ($f)" >&2
        exit 1
    fi
done

tab=$(printf '\t')
list=${TMPDIR:-/tmp}/test_docs.$$
trap 'rm -f "$list"' EXIT
trap 'exit 1' HUP INT TERM

awk '
function emit(t, v) {
    if (t == "S" && nt > 0 && ty[nt] == "S") { # adjacent literals are one
        tv[nt] = tv[nt] v
        return
    }
    nt++
    ty[nt] = t
    tv[nt] = v
    tl[nt] = FNR
}
function where(k,   n, p) {
    n = split(fname, p, "/")
    return (n > 1 ? p[n - 1] "/" : "") p[n] ":" tl[k]
}
function out(kind, k, text) {
    if (text != "")
        print kind "\t" where(k) "\t" text
}
function literal(k) {
    if (ty[k] == "S")
        out("S", k, tv[k])
}
# a printf format as an extended regular expression: each conversion any
# word (a parameter name), the rest literal
function format_re(f,   r, i, n, c, j) {
    r = ""
    n = length(f)
    for (i = 1; i <= n; i++) {
        c = substr(f, i, 1)
        if (c == "%" && substr(f, i + 1, 1) == "%") {
            r = r "%"
            i++
        } else if (c == "%") {
            for (j = i + 1; j <= n && index("-+ #0123456789.hlzjt", substr(f, j, 1)); j++)
                ;
            r = r "[A-Za-z0-9_.]+"
            i = j
        } else if (index("\\.[]()*+?{}|^$", c)) {
            r = r "\\" c
        } else {
            r = r c
        }
    }
    return r
}
# token m against the bracket depth (global `depth`): 1 a bracket opened
# or closed inside, -1 the bracket that closes the enclosing one, 0 other
function nest(m) {
    if (ty[m] == "P" && index("([{", tv[m])) {
        depth++
        return 1
    }
    if (ty[m] == "P" && index(")]}", tv[m])) {
        if (depth == 0)
            return -1
        depth--
        return 1
    }
    return 0
}
function finish(   k, m, b, bd, pending, fn, arg, first, s) {
    bd = 0
    pending = 0
    fn = 0
    for (k = 1; k <= nt; k++) {
        # 1: assignments to a reason variable, up to the end of the expression
        if (ty[k] == "I" && tv[k] ~ /why/ && ty[k + 1] == "P" && tv[k + 1] == "=") {
            depth = 0
            for (m = k + 2; m <= nt && ty[m] != "E"; m++) {
                if ((b = nest(m)) < 0 ||
                    (!b && ty[m] == "P" && depth == 0 && (tv[m] == "," || tv[m] == ";")))
                    break
                literal(m)
            }
        }
        # 2: literals returned by functions returning const char *
        if (ty[k] == "P" && tv[k] == "{") {
            if (pending && bd == 0)
                fn = 1
            pending = 0
            bd++
        } else if (ty[k] == "P" && tv[k] == "}") {
            if (--bd <= 0)
                bd = fn = 0
        } else if (ty[k] == "P" && tv[k] == ";" && bd == 0) {
            pending = 0
        }
        if (bd == 0 && ty[k] == "I" && tv[k] == "char" && tv[k - 1] == "const" &&
            tv[k + 1] == "*" && ty[k + 2] == "I" && tv[k + 3] == "(")
            pending = 1
        if (fn && ty[k] == "I" && tv[k] == "return")
            for (m = k + 1; m <= nt && !(ty[m] == "P" && tv[m] == ";"); m++)
                literal(m)
        # 3: #define NAME "literal"
        if (ty[k] == "P" && tv[k] == "#" && tv[k + 1] == "define" && ty[k + 2] == "I" &&
            ty[k + 3] == "S" && ty[k + 4] == "E")
            literal(k + 3)
        # 4: reasons passed to the functions and macros that take one (the
        # host copies of GPU buffers: by_hand_##name(..., "no state", ...))
        m = k + 1
        while (tv[m] == "##" && ty[m + 1] == "I")
            m += 2
        if (ty[k] == "I" && (tv[k] == "FALLBACK" || tv[k] == "tacos_mem_why" ||
                             tv[k] == "coll_tacos_unserved" || tv[k] == "pmpi_unserved" ||
                             tv[k] ~ /^by_hand_/) &&
            tv[m] == "(" && tv[k - 1] != "define") {
            depth = 0
            arg = 0
            for (m++; m <= nt; m++) {
                if ((b = nest(m)) < 0)
                    break
                if (b)
                    continue
                if (ty[m] == "P" && depth == 0 && tv[m] == ",")
                    arg++
                else if (arg >= 2)
                    literal(m)
            }
        }
        # 5: formats written into a reason buffer
        if (ty[k] == "I" && tv[k] == "snprintf" && tv[k + 1] == "(") {
            first = 0
            for (m = k + 2; m <= nt && !(ty[m] == "P" && tv[m] == ","); m++)
                if (ty[m] == "I" && tv[m] ~ /why/)
                    first = 1
            for (; first && m <= nt && ty[m] != "S"; m++)
                ;
            s = m <= nt ? tv[m] : ""
            gsub(/%[-+ #0-9.hlzjt]*[a-zA-Z%]/, "", s) # a constant part with a word
            if (first && s ~ /[A-Za-z]/)
                out("F", m, format_re(tv[m]))
        }
    }
    if (bd != 0)
        print "test_docs: unbalanced braces in " fname " (the extraction may miss reasons)" > "/dev/stderr"
    nt = 0
}
FNR == 1 {
    if (NR > 1)
        finish()
    fname = FILENAME
    incomment = 0
    cont = 0
}
{
    line = $0
    n = length(line)
    i = 1
    if (!incomment && !cont && line ~ /^[ \t]*#/) {
        emit("P", "#")
        i = index(line, "#") + 1
        indirective = 1
    }
    while (i <= n) {
        if (incomment) {
            j = index(substr(line, i), "*/")
            if (j == 0)
                break
            i += j + 1
            incomment = 0
            continue
        }
        c = substr(line, i, 1)
        c2 = substr(line, i, 2)
        if (c == " " || c == "\t" || c == "\r" || c == "\f") {
            i++
        } else if (c2 == "/*") {
            incomment = 1
            i += 2
        } else if (c2 == "//") {
            break
        } else if (c == "\"" || c == "\047") {
            for (j = i + 1; j <= n; j++) {
                d = substr(line, j, 1)
                if (d == "\\")
                    j++
                else if (d == c)
                    break
            }
            emit(c == "\"" ? "S" : "C", substr(line, i + 1, j - i - 1))
            i = j + 1
        } else if (c ~ /[A-Za-z_0-9]/) {
            rest = substr(line, i)
            if (c ~ /[0-9]/)
                match(rest, /^[A-Za-z_0-9.]+/)
            else
                match(rest, /^[A-Za-z_0-9]+/)
            emit(c ~ /[0-9]/ ? "N" : "I", substr(rest, 1, RLENGTH))
            i += RLENGTH
        } else if (c2 == "==" || c2 == "!=" || c2 == "<=" || c2 == ">=" || c2 == "->" ||
                   c2 == "&&" || c2 == "||" || c2 == "++" || c2 == "--" || c2 == "<<" ||
                   c2 == ">>" || c2 == "##" || (index("+-*/%&|^", c) && substr(line, i + 1, 1) == "=")) {
            emit("P", c2)
            i += 2
        } else {
            emit("P", c)
            i++
        }
    }
    cont = line ~ /\\$/
    if (indirective && !cont && !incomment) {
        emit("E", "")
        indirective = 0
    }
}
END {
    if (NR > 0)
        finish()
}' "$@" | awk -F "$tab" '!seen[$1 FS $3]++' >"$list" || exit 1

n=$(wc -l <"$list")
if [ "$n" -lt 20 ]; then
    echo "FAIL: only $n reasons found in the sources: has their shape changed?" \
        "(tests/unit/test_docs.sh)" >&2
    exit 1
fi
missing=0
bq='`'
while IFS="$tab" read -r kind at text; do
    if [ "$kind" = F ]; then
        grep -Eq -e "$bq$text$bq" "$doc" && continue
        echo "FAIL: docs/troubleshooting.md has no reason of the form $bq$text$bq ($at)" >&2
    else
        grep -Fq -e "$bq$text$bq" "$doc" && continue
        echo "FAIL: docs/troubleshooting.md lacks the reason $bq$text$bq ($at)" >&2
    fi
    missing=$((missing + 1))
done <"$list"
if [ "$missing" != 0 ]; then
    echo "test_docs: $missing of $n reasons missing: add each to docs/troubleshooting.md with what to do" >&2
    exit 1
fi
# every reason has a key in the core's table (core/event.c; the forms that
# name a parameter make theirs from it), and every key is in the doc
keys=$top/core/event.c
prefixes=$(sed -n 's/^ *{"\([^"]*\)", "[a-z0-9_]*"},$/\1/p' "$keys")
if [ -z "$prefixes" ]; then
    echo "FAIL: no reason keys found in $keys: has its table changed shape?" >&2
    exit 1
fi
has_key() {
    printf '%s\n' "$prefixes" | while IFS= read -r p; do
        case $1 in "$p"*) echo y; break ;; esac
    done
}
while IFS="$tab" read -r kind at text; do
    # (the key function's own "-" and "other"; the advice after a reason)
    case $text in "below "* | *" is 0" | *" off" | - | other | "copy them to the host") continue ;; esac
    [ "$kind" = F ] || [ "$(has_key "$text")" = y ] && continue
    echo "FAIL: the reason $bq$text$bq ($at) has no key in core/event.c" >&2
    missing=$((missing + 1))
done <"$list"
for k in $(sed -n 's/^ *{"[^"]*", "\([a-z0-9_]*\)"},$/\1/p' "$keys" | sort -u); do
    grep -Fq -e "| $bq$k$bq |" "$doc" && continue
    echo "FAIL: docs/troubleshooting.md lacks the event key $bq$k$bq" >&2
    missing=$((missing + 1))
done
if [ "$missing" != 0 ]; then
    echo "test_docs: $missing reasons or keys missing" >&2
    exit 1
fi
echo "test_docs: all $n reasons the sources give are in docs/troubleshooting.md, each with a key"
