#!/bin/sh
# Checks that the library's layers include only layers below them
# (STYLE.md: shmem -> rpipe -> {rmalloc, btl} -> bootstrap -> util; oshrun,
# the launcher, uses util and bootstrap; tools/ (oshinfo) uses util, bootstrap
# and btl, never a backend). Prints one line per bad #include
# and exits 1 if there is any. Usage: check-layers.sh [top_srcdir]
top=${1:-.}
cd "$top" || exit 2

find util bootstrap btl rmalloc rpipe shmem oshrun tools -type f \
     \( -name '*.c' -o -name '*.h' \) | sort |
awk '
BEGIN {
    # Layers each layer may include (itself included). rmalloc and btl sit
    # side by side: neither includes the other.
    may["util"]      = "util"
    may["bootstrap"] = "util bootstrap"
    may["btl"]       = "util bootstrap btl"
    may["rmalloc"]   = "util bootstrap rmalloc"
    may["rpipe"]     = "util bootstrap btl rmalloc rpipe"
    may["shmem"]     = "util bootstrap btl rmalloc rpipe shmem"
    may["oshrun"]    = "util bootstrap oshrun"
    may["tools"]     = "util bootstrap btl tools"
    bad = 0
}
function allowed(from, to,    n, i, list) {
    n = split(may[from], list, " ")
    for (i = 1; i <= n; i++)
        if (list[i] == to)
            return 1
    return 0
}
{
    file = $0
    nparts = split(file, part, "/")
    layer = part[1]
    # a backend is btl/<name>/: only its own files include its headers
    backend = (layer == "btl" && nparts > 2) ? part[2] : ""
    lineno = 0
    while ((getline line < file) > 0) {
        lineno++
        if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/)
            continue
        inc = line
        sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
        # The *_env.def files are rows of the one env registry in util/env.c
        # (STYLE.md rule 12): data collected from every layer, not an interface.
        if (inc ~ /_env\.def$/ && file == "util/env.c")
            continue
        # "x.h" is found next to the includer or at the top (config.h): the
        # library is built with -I top_srcdir only, so never another layer
        if (inc !~ /\//)
            continue
        nt = split(inc, tpart, "/")
        to = tpart[1]
        if (!(to in may))
            continue
        if (!allowed(layer, to)) {
            printf "%s:%d: layer %s must not include %s (layer %s is not below it)\n",
                   file, lineno, layer, inc, to
            bad++
        } else if (to == "btl" && nt > 2 && tpart[2] != backend) {
            printf "%s:%d: only btl/%s/ may include its backend header %s\n",
                   file, lineno, tpart[2], inc
            bad++
        }
    }
    close(file)
}
END { exit bad > 0 }
'
