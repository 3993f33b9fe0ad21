#!/usr/bin/env python3
"""The shape review's numbers of a source tree (issue 47's "Done when"), measured the same way every time.

    python3 scripts/shape_numbers.py [--tree DIR] [--json] [--no-walks] [--keep]

1. files:  the largest files of runtime/src (lines, as wc -l counts them) and how many are over 700 lines.
2. structs: the largest struct bodies of runtime/src by declared members (`int a, b;` is two; a nested struct or
   union member is one, and has an entry of its own; a function pointer is one; `#if` branches are all counted).
3. walks:  the runtime of the tree built with -finstrument-functions in a build directory of its own under /tmp
   (targets iotame and iotame-kernel), a tracer library written and compiled here (not instrumented) preloaded
   with it, and one small job (2 ranks, `iotame-kernel ior -a MPIIO -c -w -r -b 1m -t 256k`) with
   staging.enabled and collective.strategy "auto" and the sample machine profile keyed to the job's file system
   (IOTAME_PROFILE), its write-back set to absorb nothing so that staging stages the file and stage_open runs to
   its end. From rank 0's trace, for the first call of each origin hook (stage's and collective's `open`):
   the runtime's own calls made inside it (stops), the deepest nesting, the distinct functions, the settings
   lookups (outermost calls of the settings accessors), and the same walk counted by source files (files entered,
   arrivals in another file, returns to a file already left: issue 30's count). For each MPI_File_open of the data
   file: the profile searches asked for, and whether each was a cache hit (no search or load ran under it).
4. strategy: the files an added strategy touches, estimated from the names: its own file, runtime/settings.json,
   every file naming all the concrete strategies (registries, enums, lists), and the files outside its own that
   read its own options (settings.json entries with "strategy": NAME) or name it. A proxy until a test adds a toy
   strategy for real; the names it found are printed.

Function names the walks look for are in NAMES below, in one place: a tree with renamed functions is measured by
editing them (or --names FILE, a JSON object overriding some of them). When an origin function is not in a tree,
its module table's `.open` initializer is taken (iotame_module_stage / iotame_module_collective).

Python standard library only. Needs gcc, cmake, nm and the MPI of the tree's build (mpiexec) for the walks.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

# ---- every function name the measurement depends on ----
NAMES = {
    # origin of each walk: the function, else the `.open` of this module table (found in the source)
    "walks": {
        "staging.enabled": {"function": "stage_open", "module": "iotame_module_stage"},
        "collective.strategy": {"function": "iotame__coll_open", "module": "iotame_module_collective"},
    },
    # settings accessors: a call of one of these not nested in another is one lookup
    "settings": ["iotame_config_setting", "iotame_config_value", "iotame_config_default", "iotame_config_any",
                 "iotame_file_setting", "iotame_file_settings", "iotame_settings_get", "iotame_setting"],
    # a profile asked for (per call), a search of the file system's profiles, a profile file parsed
    "profile_find": ["iotame_profile_for", "iotame_profile_find", "iotame_file_profile", "iotame_profile_of"],
    "profile_search": ["profile_find_search"],
    "profile_load": ["iotame_profile_load"],
    # the wrapper whose calls delimit a file open
    "open": "MPI_File_open",
}
FILE_LIMIT = 700
STRUCT_LIMIT = 20
TOP = 5
KERNEL_ARGS = ["ior", "-a", "MPIIO", "-c", "-w", "-r", "-b", "1m", "-t", "256k"]
RANKS = 2
CONFIG = {"version": 1, "defaults": {"staging": {"enabled": "auto"}, "collective": {"strategy": "auto"}}}

SRC = "runtime/src"
C_EXT = (".c", ".h")


# ---------------------------------------------------------------- 1. files

def source_files(tree):
    root = tree / SRC
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in C_EXT)


def file_sizes(tree):
    rows = []
    for p in source_files(tree):
        with open(p, "rb") as f:
            rows.append({"file": str(p.relative_to(tree)), "lines": f.read().count(b"\n")})
    rows.sort(key=lambda r: (-r["lines"], r["file"]))
    return {"top": rows[:TOP], "over": sum(r["lines"] > FILE_LIMIT for r in rows), "limit": FILE_LIMIT,
            "files": len(rows), "total_lines": sum(r["lines"] for r in rows)}


# ---------------------------------------------------------------- 2. structs

def strip_c(text, strings=False):
    """Comments, string and character literals (unless `strings`) and preprocessor lines blanked, newlines kept
    (line numbers)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#" or (at_line_start and c in " \t" and text[i:].lstrip(" \t").startswith("#")):
            # a preprocessor line, with its continuations
            j = i
            while j < n:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                if k > 0 and text[k - 1] == "\\":
                    out.append("\n")
                    j = k + 1
                    continue
                break
            i = k
            at_line_start = False
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
            continue
        if text.startswith("//", i):
            k = text.find("\n", i)
            k = n if k < 0 else k
            i = k
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1] if strings else c + c + "\n" * text[i:j + 1].count("\n"))
            i = j + 1
            continue
        out.append(c)
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        i += 1
    return "".join(out)


def split_top(s, sep):
    """s split at `sep` outside (), [], {}."""
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def match_brace(s, i):
    """Index of the } closing the { at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(s) - 1


AGG = re.compile(r"\b(struct|union)\b(\s+[A-Za-z_]\w*)?\s*\{")


def count_members(body):
    """Members of one struct/union body (nested bodies blanked out, each nested member counting one)."""
    # blank nested bodies: `struct {...} x;` becomes `struct @ x;`
    flat, i = [], 0
    while i < len(body):
        if body[i] == "{":
            j = match_brace(body, i)
            flat.append("@")
            i = j + 1
        else:
            flat.append(body[i])
            i += 1
    n = 0
    for decl in split_top("".join(flat), ";"):
        decl = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", decl).strip()
        if not decl or decl.startswith("static_assert") or decl.startswith("_Static_assert"):
            continue
        if "@" in decl:  # a nested aggregate: one member (however many declarators: rare)
            n += 1
            continue
        n += len([d for d in split_top(decl, ",") if d.strip()])
    return n


def structs(tree):
    found = []
    for p in source_files(tree):
        raw = p.read_text(errors="replace")
        s = strip_c(raw)
        for m in AGG.finditer(s):
            kind, tag = m.group(1), (m.group(2) or "").strip()
            open_i = m.end() - 1
            close_i = match_brace(s, open_i)
            body = s[open_i + 1:close_i]
            line = s.count("\n", 0, m.start()) + 1
            # the name: typedef's name after the body, else the tag, else the first declarator (an anonymous type)
            before = s[max(0, m.start() - 40):m.start()]
            after = s[close_i + 1:close_i + 200]
            decl = re.match(r"\s*([^;{]*)", after).group(1)
            declarators = [d.strip() for d in split_top(decl, ",") if d.strip()]
            first = re.sub(r"[\s*]|\[.*|=.*", "", declarators[0]) if declarators else ""
            typedef = re.search(r"\btypedef\s+$", before) is not None
            name = first if typedef and first else (f"{kind} {tag}" if tag else (first or f"{kind} (anonymous)"))
            found.append({"name": name, "kind": kind, "fields": count_members(body),
                          "file": str(p.relative_to(tree)), "line": line})
    found.sort(key=lambda r: (-r["fields"], r["file"], r["line"]))
    return {"top": found[:TOP], "over": sum(r["fields"] > STRUCT_LIMIT for r in found), "limit": STRUCT_LIMIT,
            "structs": len(found)}


# ---------------------------------------------------------------- 4. files touched to add a strategy

def strategy_files(tree):
    settings = json.loads((tree / "runtime/settings.json").read_text())
    coll = settings["sections"]["collective"]
    keys = coll.get("settings") or coll.get("keys") or {}
    strat = keys.get("strategy", {})
    names = [v for v in strat.get("values", []) if v not in ("auto", "passthrough")]
    if not names:
        return None
    options = {nm: [k for k, v in keys.items() if isinstance(v, dict) and v.get("strategy") == nm] for nm in names}
    # the code without its comments (strings kept: "view_based" in a strcmp is a tie to the strategy)
    texts = {str(p.relative_to(tree)): strip_c(p.read_text(errors="replace"), strings=True)
             for p in source_files(tree)}
    texts["runtime/settings.json"] = (tree / "runtime/settings.json").read_text()
    lower = {f: t.lower() for f, t in texts.items()}

    def names_it(f, nm):
        return re.search(r"(?<![a-z0-9])" + re.escape(nm) + r"(?![a-z0-9])", lower[f]) is not None

    def reads_options(f, nm):
        return f != "runtime/settings.json" and any(f'"{k}"' in texts[f] for k in options[nm])

    # files every strategy is listed in (registries, enums, the settings' values) and files parsing the options of
    # several strategies: a new strategy joins each of them
    listing = sorted(f for f in texts if all(names_it(f, nm) for nm in names))
    parsers = sorted(f for f in texts if sum(reads_options(f, nm) for nm in names if options[nm]) >= 2)
    central = sorted(set(listing) | set(parsers) | {"runtime/settings.json"})
    per = {}
    for nm in names:
        own = sorted(f for f in texts if Path(f).stem == nm and f.startswith(SRC))
        others = sorted(f for f in texts if f not in own and (f in central or names_it(f, nm) or reads_options(f, nm)))
        per[nm] = {"own": own, "others": others, "touched": len(own) + len(others)}
    return {"strategies": names, "listing_all": listing, "option_parsers": parsers, "central": central,
            "files_to_add": 1 + len(central), "per_strategy": per}


# ---------------------------------------------------------------- 3. walks

TRACER_C = r"""
/* shape_numbers.py's tracer: __cyg_profile_func_enter/exit of the functions of libiotame.so, raw addresses in one
 * binary file per process (DIR/trace.RANK.PID.bin: records {fn, tid<<1|exit}), the process's maps beside it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NI __attribute__((no_instrument_function))
static pthread_mutex_t tr_lock = PTHREAD_MUTEX_INITIALIZER;
static int tr_fd = -1, tr_state; /* 0 new, 1 on, 2 off */
static uintptr_t tr_lo[16], tr_hi[16];
static int tr_nranges;
static uint64_t tr_buf[1 << 17];
static size_t tr_used;
static int tr_final;
static __thread uint32_t tr_tid;
static __thread int tr_busy; /* what the tracer itself calls (libiotame.so may wrap it) is not traced */

/* system calls made directly: the runtime wraps open and write (its POSIX layer), and must not see ours */
NI static long tr_write(int fd, const void *p, size_t n) { return syscall(SYS_write, fd, p, n); }
NI static int tr_openat(const char *path, int flags) { return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0644); }

NI static void tr_flush(void)
{
    size_t off = 0, len = tr_used * sizeof tr_buf[0];
    while (tr_fd >= 0 && off < len) {
        long w = tr_write(tr_fd, (char *)tr_buf + off, len - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    tr_used = 0;
}

NI static void tr_open(void)
{
    const char *dir = getenv("SHAPE_TRACE_DIR");
    const char *rank = getenv("PMI_RANK");
    if (!rank) rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = "x";
    tr_state = 2;
    tr_used = 0;
    tr_nranges = 0;
    if (!dir) return;
    static char maps[1 << 20];
    char path[4096];
    size_t n = 0;
    int in = tr_openat("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    long r;
    while (in >= 0 && n < sizeof maps - 1 && (r = syscall(SYS_read, in, maps + n, sizeof maps - 1 - n)) > 0)
        n += (size_t)r;
    if (in >= 0) syscall(SYS_close, in);
    maps[n] = 0;
    snprintf(path, sizeof path, "%s/trace.%s.%d.maps", dir, rank, (int)getpid());
    int copy = tr_openat(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
    if (copy >= 0) tr_write(copy, maps, n), syscall(SYS_close, copy);
    for (char *line = maps; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        unsigned long lo, hi;
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        if (strstr(line, "libiotame.so") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 && tr_nranges < 16) {
            tr_lo[tr_nranges] = lo;
            tr_hi[tr_nranges++] = hi;
        }
        if (end) *end = '\n';
    }
    snprintf(path, sizeof path, "%s/trace.%s.%d.bin", dir, rank, (int)getpid());
    tr_fd = tr_openat(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
    if (tr_fd >= 0) tr_state = 1;
}

NI static void tr_child(void)
{ /* a forked child: its own file; the parent's buffered records are the parent's */
    pthread_mutex_init(&tr_lock, NULL);
    tr_fd = -1;
    tr_tid = 0;
    tr_open();
}

NI static void tr_event(void *fn, uint64_t exit)
{
    uintptr_t a = (uintptr_t)fn;
    if (tr_busy) return;
    tr_busy = 1;
    pthread_mutex_lock(&tr_lock);
    if (tr_state == 0) {
        tr_open();
        pthread_atfork(NULL, NULL, tr_child);
    }
    int in = 0;
    for (int i = 0; i < tr_nranges && !in; i++) in = a >= tr_lo[i] && a < tr_hi[i];
    if (tr_state == 1 && in) {
        if (!tr_tid) tr_tid = (uint32_t)syscall(SYS_gettid);
        tr_buf[tr_used++] = (uint64_t)a;
        tr_buf[tr_used++] = ((uint64_t)tr_tid << 1) | exit;
        if (tr_final || tr_used + 2 > sizeof tr_buf / sizeof tr_buf[0]) tr_flush();
    }
    pthread_mutex_unlock(&tr_lock);
    tr_busy = 0;
}

NI void __cyg_profile_func_enter(void *fn, void *site) { tr_event(fn, 0); }
NI void __cyg_profile_func_exit(void *fn, void *site) { tr_event(fn, 1); }

NI __attribute__((destructor)) static void tr_end(void)
{
    tr_busy = 1;
    pthread_mutex_lock(&tr_lock);
    tr_flush();
    tr_final = 1; /* what comes after (other destructors) is written at once */
    pthread_mutex_unlock(&tr_lock);
    tr_busy = 0;
}
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(tree, log):
    """The tree's runtime and kernel built with -finstrument-functions in /tmp/shape-build-<hash of the tree>."""
    h = hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:10]
    bdir = Path(tempfile.gettempdir()) / f"shape-build-{h}"
    if not (bdir / "CMakeCache.txt").exists():
        run(["cmake", "-S", str(tree), "-B", str(bdir), "-DCMAKE_C_FLAGS=-finstrument-functions",
             "-DCMAKE_BUILD_TYPE=RelWithDebInfo"], stdout=log, stderr=subprocess.STDOUT)
    run(["cmake", "--build", str(bdir), "--target", "iotame", "iotame-kernel", "-j2"], stdout=log,
        stderr=subprocess.STDOUT)
    libs = sorted(bdir.rglob("libiotame.so*"), key=lambda p: (p.is_symlink(), len(str(p))))
    kernel = next(bdir.rglob("iotame-kernel"))
    return bdir, next(p for p in libs if p.name == "libiotame.so"), kernel


def tracer(workdir):
    src = workdir / "shape_tracer.c"
    so = workdir / "shape_tracer.so"
    src.write_text(TRACER_C)
    run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(so), str(src), "-lpthread"])
    return so


def symbols(lib, tree):
    """Offset -> (name, source file relative to the tree, or None when it is not the runtime's own)."""
    out = subprocess.run(["nm", "-l", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    syms = {}
    root = str(tree.resolve()) + "/"
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] not in "tTwW":
            continue
        off, name = int(parts[0], 16), parts[2]
        src = None
        if len(parts) == 4:
            where = parts[3].rsplit(":", 1)[0].strip()
            where = os.path.normpath(where)
            if where.startswith(root):
                src = where[len(root):]
        if off not in syms or (syms[off][1] is None and src):
            syms[off] = (name, src)
    return syms


def module_open_hook(tree, module):
    """The `.open` initializer of a module's table, found in the source."""
    for p in source_files(tree):
        s = strip_c(p.read_text(errors="replace"))
        m = re.search(r"\b" + re.escape(module) + r"\s*=\s*\{", s)
        if m:
            body = s[m.end():match_brace(s, m.end() - 1)]
            o = re.search(r"\.open\s*=\s*&?\s*([A-Za-z_]\w*)", body)
            if o:
                return o.group(1)
    return None


def load_trace(path, maps, lib, syms):
    """[(tid, name, file, is_exit)] of one process, libiotame.so's own functions only."""
    base = None
    real = os.path.realpath(lib)
    for line in Path(maps).read_text().splitlines():
        f = line.split()
        if len(f) >= 6 and os.path.realpath(f[5]) == real and int(f[2], 16) == 0:
            base = int(f[0].split("-")[0], 16)
            break
    if base is None:
        raise RuntimeError(f"{lib} is not in {maps}")
    data = Path(path).read_bytes()
    events, cache = [], {}
    for fn, word in struct.iter_unpack("<QQ", data[:len(data) // 16 * 16]):
        r = cache.get(fn)
        if r is None:
            r = cache[fn] = syms.get(fn - base, (hex(fn - base), None))
        events.append((word >> 1, r[0], r[1], word & 1))
    return events


def by_thread(events):
    t = {}
    for tid, name, src, ex in events:
        t.setdefault(tid, []).append((name, src, ex))
    return t


def subtree(seq, start):
    """The events strictly inside the call entered at seq[start] (up to its matching exit)."""
    depth, out = 0, []
    for i in range(start, len(seq)):
        name, src, ex = seq[i]
        depth += -1 if ex else 1
        if depth == 0:
            return out
        if i > start:
            out.append(seq[i])
    return out


def walk(seq, start, names):
    """Counts of one call: the runtime's own functions only (those whose source is under the tree's runtime/)."""
    origin, origin_src, _ = seq[start]
    inner = subtree(seq, start)
    settings = set(names["settings"])
    stack = []  # (name, src, own)
    stops = depth = max_depth = lookups = 0
    distinct = Counter()
    # the walk by files: where control is after each event (the callee's file at an entry, the caller's at an exit)
    here, visited, left = origin_src, {origin_src}, set()
    arrivals = returns = calls_out = calls_back = 0
    for name, src, ex in inner:
        own = src is not None and src.startswith("runtime/")
        if not ex:
            in_lookup = any(s[0] in settings for s in stack if s[2])
            stack.append((name, src, own))
            if not own:
                continue
            depth += 1
            stops += 1
            max_depth = max(max_depth, depth)
            distinct[name] += 1
            if name in settings and not in_lookup:
                lookups += 1
            caller = next((s[1] for s in reversed(stack[:-1]) if s[2]), origin_src)
            if src != caller:
                calls_out += 1
                calls_back += src in left
            dest = src
        else:
            if not stack:
                break
            n, s, o = stack.pop()
            if not o:
                continue
            depth -= 1
            dest = next((x[1] for x in reversed(stack) if x[2]), origin_src)
        if dest != here:
            left.add(here)
            arrivals += 1
            returns += dest in left
            visited.add(dest)
            here = dest
    return {"function": origin, "file": origin_src, "stops": stops, "max_depth": max_depth,
            "distinct_functions": len(distinct), "settings_lookups": lookups,
            "files_entered": len(visited), "file_arrivals": arrivals, "file_returns": returns,
            "file_calls": calls_out, "file_calls_back": calls_back,
            "most_called": distinct.most_common(5)}


def profile_counts(seq, start, names):
    inner = subtree(seq, start)
    finds, searches, loads = set(names["profile_find"]), set(names["profile_search"]), set(names["profile_load"])
    asked, per = 0, []
    stack = []
    for name, src, ex in inner:
        if not ex:
            if name in finds and not any(s in finds for s in stack):
                asked += 1
                per.append({"by": next((s for s in reversed(stack) if s not in finds), None), "hit": True})
            if (name in searches or name in loads) and per and any(s in finds for s in stack):
                per[-1]["hit"] = False
            stack.append(name)
        elif stack:
            stack.pop()
    return {"asked": asked, "searched": sum(not p["hit"] for p in per), "cache_hits": sum(p["hit"] for p in per),
            "callers": [p["by"] for p in per],
            "loads": sum(1 for n, s, e in inner if not e and n in loads)}


def walks(tree, names, keep, log, config=CONFIG):
    bdir, lib, kernel = build(tree, log)
    work = Path(tempfile.mkdtemp(prefix="shape-run-"))
    try:
        so = tracer(work)
        tdir = work / "trace"
        tdir.mkdir()
        jobdir = work / "job"
        jobdir.mkdir()
        xdg = work / "xdg"
        xdg.mkdir()
        # the sample profile keyed to the job directory's file system (tests/preload/test_profile_runtime.py)
        prof = json.loads((tree / "tests/unit/data/profile_sample.json").read_text())
        magic = subprocess.run(["stat", "-f", "-c", "%t", str(jobdir)], capture_output=True, text=True, check=True)
        st = os.stat(jobdir)
        prof["filesystem"].update(path=str(jobdir), type="test", magic="0x" + magic.stdout.strip(),
                                  device=f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}", targets=1, stripe_unit=0)
        # writes synchronous (no write-back absorbs them): staging "auto" stages the file, so stage_open runs to its
        # end (tests/preload/test_stage_auto.py's with_write_back(0)); with the sample's write-back it returns early
        wb = prof.get("storage", {}).get("write_back")
        if isinstance(wb, dict):
            wb.update(absorbed_bytes=0, absorbed_mbs=0)
        (work / "profile.json").write_text(json.dumps(prof))
        (work / "config.json").write_text(json.dumps(config))
        env = dict(os.environ, IOTAME_CONFIG=str(work / "config.json"),
                   IOTAME_PROFILE=str(work / "profile.json"), IOTAME_STATS=str(work / "stats.json"),
                   XDG_CONFIG_HOME=str(xdg), SHAPE_TRACE_DIR=str(tdir))
        env.pop("IOTAME_DISABLE", None)
        # LD_PRELOAD for the ranks only (-genv), not for mpiexec itself
        cmd = ["mpiexec", "-n", str(RANKS), "-genv", "LD_PRELOAD", f"{so}:{lib}", str(kernel)] + KERNEL_ARGS
        p = subprocess.run(cmd, cwd=jobdir, env=env, capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
        result = json.loads(p.stdout.strip().splitlines()[-1])
        syms = symbols(lib, tree)
        rank0 = sorted(tdir.glob("trace.0.*.bin"), key=lambda q: -q.stat().st_size)
        if not rank0:
            raise RuntimeError(f"no trace of rank 0 in {tdir}")
        threads = by_thread(load_trace(rank0[0], rank0[0].with_suffix(".maps"), lib, syms))
        out = {"command": " ".join(["mpiexec", "-n", str(RANKS), "iotame-kernel"] + KERNEL_ARGS),
               "config": config, "verified": result.get("verified"), "build": str(bdir), "walks": {}, "opens": []}
        for setting, origin in names["walks"].items():
            fn = origin["function"]
            if not any(n == fn for n in syms_names(syms)):
                fn = module_open_hook(tree, origin["module"]) or fn
            found = None
            for tid, seq in threads.items():
                for i, (n, s, ex) in enumerate(seq):
                    if n == fn and not ex:
                        found = (seq, i)
                        break
                if found:
                    break
            out["walks"][setting] = walk(*found, names) if found else {"function": fn, "missing": True}
        for tid, seq in threads.items():
            for i, (n, s, ex) in enumerate(seq):
                if n == names["open"] and not ex:
                    out["opens"].append(profile_counts(seq, i, names))
        stats = json.loads((work / "stats.json").read_text()) if (work / "stats.json").exists() else {}
        dfiles = [f for f in stats.get("files", []) if f.get("path", "").endswith("iotame-ior.dat")]
        if dfiles:
            out["stage_decision"] = dfiles[0].get("stage")
            out["profile_used"] = (dfiles[0].get("profile") or {}).get("path")
        return out
    finally:
        if keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def syms_names(syms):
    return (n for n, _ in syms.values())


# ---------------------------------------------------------------- output

def table(res):
    lines = [f"tree {res['tree']} ({res.get('commit') or 'no commit'})", ""]
    f = res["files"]
    lines.append(f"largest runtime files ({f['files']} files, {f['over']} over {f['limit']} lines)")
    lines += [f"  {r['lines']:6d}  {r['file']}" for r in f["top"]]
    s = res["structs"]
    lines += ["", f"largest structs ({s['structs']} bodies, {s['over']} over {s['limit']} fields)"]
    lines += [f"  {r['fields']:6d}  {r['name']:32s} {r['file']}:{r['line']}" for r in s["top"]]
    w = res.get("walks")
    if w:
        lines += ["", f"walks (rank 0 of `{w['command']}`, IOTAME_CONFIG {json.dumps(w['config'])})",
                  "  setting              origin             stops depth distinct lookups | files arrivals returns"
                  " calls-out calls-back"]
        for setting, r in w["walks"].items():
            if r.get("missing"):
                lines.append(f"  {setting:20s} {r['function']:18s} (never called)")
                continue
            lines.append(f"  {setting:20s} {r['function']:18s} {r['stops']:5d} {r['max_depth']:5d} "
                         f"{r['distinct_functions']:8d} {r['settings_lookups']:7d} | {r['files_entered']:5d} "
                         f"{r['file_arrivals']:8d} {r['file_returns']:7d} {r['file_calls']:9d} "
                         f"{r['file_calls_back']:10d}")
        lines += ["  (stops: the runtime's own calls inside the origin's first call; depth: deepest nesting below it;",
                  "   lookups: outermost settings-accessor calls; by files: files entered, arrivals in another file,",
                  "   of them returns to a file already left; calls-out: calls into another file, calls-back: of them",
                  "   into a file already left)", ""]
        lines.append("profile lookups per MPI_File_open (asked / searched / cache hits / loads: asked by)")
        for i, o in enumerate(w["opens"]):
            lines.append(f"  open {i + 1}: {o['asked']} / {o['searched']} / {o['cache_hits']} / {o['loads']}: "
                         f"{', '.join(c or '?' for c in o['callers']) or '-'}")
        if "stage_decision" in w:
            lines.append(f"  data file's staging decision: {json.dumps(w['stage_decision'])}")
    a = res.get("strategy")
    if a:
        lines += ["", f"files touched to add a strategy (estimated from names): {a['files_to_add']} = its own file + "
                      f"{', '.join(a['central'])}",
                  "  files naming or reading the options of each strategy (its own first):"]
        for nm, r in a["per_strategy"].items():
            lines.append(f"  {nm:15s} {r['touched']:2d}: {', '.join(r['own'] + r['others'])}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", default=str(Path(__file__).resolve().parent.parent), help="source tree (default: "
                    "this checkout)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--no-walks", action="store_true", help="no build and no job: files, structs, strategy only")
    ap.add_argument("--names", help="JSON file overriding entries of NAMES (function names looked for)")
    ap.add_argument("--keep", action="store_true", help="keep the job's directory (traces) under /tmp")
    ap.add_argument("--config", help="the job's IOTAME_CONFIG instead of staging and collective auto (the same "
                    "configuration before and after, or the walks do not compare)")
    args = ap.parse_args(argv)
    tree = Path(args.tree).resolve()
    names = dict(NAMES)
    if args.names:
        names.update(json.loads(Path(args.names).read_text()))
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    res = {"tree": str(tree), "commit": commit, "files": file_sizes(tree), "structs": structs(tree)}
    try:
        res["strategy"] = strategy_files(tree)
    except (OSError, KeyError, ValueError) as e:
        res["strategy"] = None
        print(f"strategy files: {e}", file=sys.stderr)
    if not args.no_walks:
        with tempfile.NamedTemporaryFile("w", prefix="shape-build-", suffix=".log", delete=False) as log:
            try:
                config = json.loads(Path(args.config).read_text()) if args.config else CONFIG
                res["walks"] = walks(tree, names, args.keep, log, config)
            except (subprocess.CalledProcessError, RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"walks: {e} (build log: {log.name})", file=sys.stderr)
                return 1
    print(json.dumps(res, indent=1) if args.json else table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
